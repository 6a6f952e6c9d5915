"""Numeric limits shared by the strict readers, the generated model and the bindings.

A module of its own so that the validation path can use them without importing
pydantic (ptn.metadata.glue), which costs a tenth of a second of start-up.
"""

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1
