"""The wheel itself: its archive, ELF files, GPU code objects and metadata, read into the report the checks judge."""
