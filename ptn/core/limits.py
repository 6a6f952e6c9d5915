"""Numeric limits shared by the strict readers, the generated model and the bindings, and
the default time limit of one file's validation (the CLI and the batch API).

A module of its own so that the validation path can use them without importing
pydantic (ptn.metadata.glue), which costs a tenth of a second of start-up.
"""

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1

TIME_LIMIT = 120.0
"""Seconds one file's validation may take by default (``ptn validate --time-limit``,
``ptn.batch.validate_many``) before it is reported as ``ptn-timeout``."""
