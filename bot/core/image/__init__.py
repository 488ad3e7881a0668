"""Images: references, the wheel image wheelpin publishes, and the files of the image that will consume a wheel."""
