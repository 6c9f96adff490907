"""Make the shared helpers in ``tests/_cases.py`` importable.

pytest runs with ``--import-mode=importlib``, which does not put the test
directory on ``sys.path``; the helpers module is imported as ``_cases``.
"""

import sys
from pathlib import Path

_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)
