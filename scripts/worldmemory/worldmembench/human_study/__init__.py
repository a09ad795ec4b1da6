"""WorldMemBench's human evaluation (Appendix F): study sets, annotation pages, annotators' exports."""
