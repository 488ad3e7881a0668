"""What wheelpin says of the images it publishes, as documents attached to them (docs/provenance.md).

After the publish step, each image gets an in-toto Statement with a SLSA Provenance
predicate (`statement.py`: who built it from what, and what wheelpin verified) and a
CycloneDX SBOM of its wheels (`sbom.py`); with an operator's key the statement is
signed as a DSSE envelope (`dsse.py`) inside a Sigstore bundle (`bundle.py`). All of
it is pure and reproducible: the same image and facts give the same bytes, so a
republished image is found to carry its documents already. The registry side (attach,
list) is `adapters/referrers.py`.
"""
