"""One module per outside system (registry, git, GitHub, builders), each behind a Protocol."""
