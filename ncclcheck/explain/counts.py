"""Element counts: parsing within what a tensor can hold, and prime factorisation that stays fast at any size."""

from __future__ import annotations

import math
import random
import re
from collections.abc import Sequence

# A tensor's numel is an int64 in PyTorch (and NCCL counts are size_t): nothing larger is a real count.
MAX_NUMEL = 2**63 - 1
_MAX_TEXT = 64  # characters; a count has at most 19 digits, separators and an exponent included this is ample


class ExplainError(ValueError):
    """Impossible or conflicting input; the message is shown to the user as is."""


def parse_count(text: str) -> int:
    """Parse ``467019003``, ``467,019,003``, ``467_019_003`` or ``4.67e8`` into a count a tensor can have."""
    s = text.strip().replace(",", "").replace("_", "")
    if len(s) > _MAX_TEXT:
        raise ExplainError(f"{text[:24]!r}...: too long to be an element count")
    if s.startswith("-") and len(s) > 1:
        raise ExplainError(f"{text!r}: an element count must be positive")
    m = re.fullmatch(r"[+]?(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?", s)
    if not s or not m or not (m[1] or m[2]):
        raise ExplainError(f"{text!r} is not a number of elements")
    if m[3] and len(m[3].lstrip("+-").lstrip("0")) > 4:  # |exponent| >= 10^4: no count can need it
        raise ExplainError(f"{text!r}: " + ("more elements than any tensor can have (at most 2^63 - 1)"
                                            if not m[3].startswith("-") else "not a whole number of elements"))
    whole, frac, exp = m[1] or "", m[2] or "", int(m[3] or 0)
    digits = (whole + frac).lstrip("0")
    scale = exp - len(frac)
    if digits and len(digits) + scale > 19:  # at least 10^19 > 2^63 - 1; decided before building a huge integer
        raise ExplainError(f"{text!r}: more elements than any tensor can have (at most 2^63 - 1)")
    value = int(digits or "0")
    if scale < 0:
        if -scale > len(digits):  # a nonzero mantissa divided by more than its digits: a fraction
            raise ExplainError(f"{text!r} is not a whole number of elements")
        value, rem = divmod(value, 10**-scale)
        if rem:
            raise ExplainError(f"{text!r} is not a whole number of elements")
    else:
        value *= 10**scale
    if value <= 0:
        raise ExplainError(f"{text!r}: an element count must be positive")
    if value > MAX_NUMEL:
        raise ExplainError(f"{text!r}: more elements than any tensor can have (at most 2^63 - 1)")
    return value


_SMALL_PRIMES = (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37)


def is_prime(n: int) -> bool:
    """Miller-Rabin with the first 12 prime bases: deterministic for every n < 3.3e24, far above int64."""
    if n < 2:
        return False
    for p in _SMALL_PRIMES:
        if n % p == 0:
            return n == p
    d, s = n - 1, 0
    while d % 2 == 0:
        d //= 2
        s += 1
    for a in _SMALL_PRIMES:
        x = pow(a, d, n)
        if x in (1, n - 1):
            continue
        for _ in range(s - 1):
            x = x * x % n
            if x == n - 1:
                break
        else:
            return False
    return True


def _rho(n: int, rng: random.Random) -> int:
    """A non-trivial factor of the odd composite n (Pollard's rho, Brent's cycle finding, batched gcds)."""
    while True:
        y, c, m = rng.randrange(1, n), rng.randrange(1, n), 128
        g = r = q = 1
        x = ys = y
        while g == 1:
            x = y
            for _ in range(r):
                y = (y * y + c) % n
            k = 0
            while k < r and g == 1:
                ys = y
                for _ in range(min(m, r - k)):
                    y = (y * y + c) % n
                    q = q * abs(x - y) % n
                g = math.gcd(q, n)
                k += m
            r *= 2
        if g == n:
            g = 1
            while g == 1:
                ys = (ys * ys + c) % n
                g = math.gcd(abs(x - ys), n)
        if g != n:
            return g


def factorize(n: int) -> list[int]:
    """Prime factors with multiplicity, smallest first; milliseconds for any count up to 2^63."""
    if n < 1:
        raise ValueError("factorize needs a positive integer")
    out: list[int] = []
    for p in (2, 3, 5, 7, 11, 13):
        while n % p == 0:
            out.append(p)
            n //= p
    rng = random.Random(n)  # seeded by the number: the same input always takes the same path
    stack = [n] if n > 1 else []
    while stack:
        m = stack.pop()
        if is_prime(m):
            out.append(m)
            continue
        d = _rho(m, rng)
        stack += [d, m // d]
    return sorted(out)


def format_factors(factors: Sequence[int]) -> str:
    """``2^20 × 3 × 7^2``."""
    parts = []
    for p in sorted(set(factors)):
        k = factors.count(p)
        parts.append(f"{p:,}" + (f"^{k}" if k > 1 else ""))
    return " × ".join(parts) if parts else "1"
