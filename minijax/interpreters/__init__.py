"""Transformations as interpreters: each module here is one way of running primitives.

``ad.py`` (forward mode), ``partial_eval.py`` (compute the known, record the unknown),
``transpose.py`` (run linear programs backwards), and the rule tables ``jvp_rules.py`` and
``transpose_rules.py``.
"""
