"""Engines that execute the semantic core behind one contract (``base.py``): ``reference``
(plain Python, the executable specification) and ``spark`` (native and general paths)."""
