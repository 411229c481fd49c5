"""Engines that execute the semantic core: ``reference`` (plain Python, the executable
specification) and ``spark`` (issue 3)."""
