"""`python -m bot`: the `wheelpin` command, for when its script is not on PATH."""

from .cli import main

raise SystemExit(main())
