"""Mutation testing of the core modules (docs/mutation-testing.md): ``python -m tools.mutation``."""
