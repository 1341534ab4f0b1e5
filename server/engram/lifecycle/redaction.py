"""Secret redaction (docs/lifecycle.md, docs/security.md): the rules live in
:mod:`engram.redaction`, a foundation module, because agent hooks and the observer's
scratchpad redact before they write too."""

from engram.redaction import RedactionResult, Redactor, redact_secrets, redact_value

__all__ = ["RedactionResult", "Redactor", "redact_secrets", "redact_value"]
