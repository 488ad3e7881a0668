"""The pin formats: how a downstream file writes a wheel pin, one module each behind the one
interface of `base.py` (read the pinned reference and wheel sha256s with where they are
written; say, with the closest name, what a pin names that the file lacks), by name in
`api.py`. `core/pins/bump.py` reads and bumps a component's pins through them, whatever their
format; tests/core/pins/test_pinformat_contract.py holds every registered format to the interface.
"""
