"""Presentation apart from the model (httpbench.result): ab's text report
(text), the notebook's HTML summary (html), matplotlib plots (plots) and
HdrHistogram's percentile text (hgrm). Each renders a Result it is given;
none is imported until a report is asked for."""
