"""Perception shared by the benchmarks: what a generated video shows, estimated from its pixels.

The papers read every metric through estimators (WorldMemBench Section 4 and Appendix C: a
tracker, DA3 / ViPE, ArcFace, MUSIQ, the LAION aesthetic predictor, a VLM judge; PersistBench
Method 2: SAM2 started by DINO matching, DINOv2, a VLM judge). One module per capability holds
its interface and its backends; backends are chosen by name in the config through
``registry`` (no if/elif chains), and the oracle (the truth channels a reference model wrote,
``oracle``) stands in for every estimator on reference models, where it calibrates the metrics.

Capabilities: ``tracking`` (target masks), ``camera`` (poses), ``depth``, ``faces``,
``imaging_quality``, ``aesthetic_quality``, ``judge``, ``features`` (patch features). A
capability without a backend is Unavailable with a reason naming the config key that selects
one, and every metric that needs it is NaN with that reason.
"""
