"""Pattern pieces whose search time stays linear in the line, however hostile the line.

Python's ``re`` backtracks: ``A.*?B`` tried from every ``A`` of a line rescans the rest of the line each time (13 s on
one 63 KB line of repeated ``[c10d]``), and a leading loop such as ``[\\d.]+ GiB`` is retried from every character of
a long run of digits. Two rules keep a search linear:

* between two parts, scan only up to the next start of the first part (:func:`then`): the last ``A`` before a ``B``
  is as good a witness as the first, and each stretch of the line is scanned once;
* a leading loop over a class starts only where a run of that class starts (a negative lookbehind), or is bounded
  (``{1,64}``) where it follows a literal that may repeat.
"""

from __future__ import annotations


def then(first: str, second: str, lazy: bool = True) -> str:
    """``first.*?second`` (``lazy``) or ``first.*second`` as a pattern that scans each stretch of a line once: the
    gap stops at the next ``first``. What matches is unchanged; the match may start at a later ``first``. ``first``
    holds no capturing group (the gap repeats it)."""
    gap = f"(?:(?!{first}).)*" + ("?" if lazy else "")
    return f"(?:{first}){gap}(?:{second})"
