"""Pure logic of wheelpin: no network, no subprocess. Adapters and the app build on it."""
