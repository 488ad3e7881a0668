"""Who built a wheel, and whether that is enough: a component's `trust` config, the
attestations found for its wheels, and the decision (accept, refuse, a downgrade said loudly)."""
