"""The long-running side of wheelpin: settings, logging, and (later) the service."""
