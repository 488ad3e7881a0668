"""The rules a wheel must pass before it is published (docs/design.md §1.3): one module per
check, each a base.WheelCheck, listed by name in api.CHECKS; rules.WheelRules holds a rule
per check and `problems` applies them. Pure: the wheel's reading is core/wheel/report.py's.

Import each part from its module, so that a pass that checks no wheel (a no-op) loads
none of the checks themselves (api.py's registry, rules.py, component.py): it reads only
glibc.py's version parser (through the config's model), wheelset.py's python tags (through
the sha256 pin rule) and digest.py's digest of the rules.
"""
