"""The C library's own last words: glibc's checks of its heap and of a program's buffers, each printed as the
process aborts itself (SIGABRT).

glibc's allocator checks its chunks' headers and free lists as it allocates and frees (malloc/malloc.c); where one
does not hold, ``malloc_printerr`` names the check and aborts: memory written past an allocation, freed twice, or a
pointer that malloc never returned, in any code of the process (a native library, an extension, the program). Since
glibc 2.26 it prints the message alone, ``%s\\n`` (``free(): invalid pointer``, ``double free or corruption (out)``,
``malloc(): corrupted top size``, ``free(): double free detected in tcache 2``, ``corrupted size vs. prev_size``,
``malloc_consolidate(): invalid chunk size``; every message names the function that checked, or is one of the
``double free``/``corrupted`` sentences); up to 2.25 it printed ``*** Error in `<argv[0]>': <message>: 0x<pointer>
***`` with the same messages (and a backtrace and memory map under it). glibc 2.36 on aborts the same way for a
failed internal assertion of malloc (``Fatal glibc error: malloc assertion failure in <function>: <condition>``).
Its fortified string functions and the compiler's stack protector end a process the same way
(debug/fortify_fail.c, debug/stack_chk_fail.c): ``*** buffer overflow detected ***: terminated`` and ``*** stack
smashing detected ***: terminated`` since 2.26, with the program's name before ``terminated`` up to 2.25.

The dynamic loader, ld.so, ends a program it cannot start the same way, in its own words (elf/dl-error-skeleton.c,
fatal_error: ``<program>: error while loading shared libraries: <library>: <reason>``, exit status 127): a library the
program needs is not where the loader looks, or cannot be used (job/statements.toml's ``library_*`` entries).

Each is a :class:`Clue` of the kind ``glibc`` of the line's process (the parser names it): the line states the
process's own failure, memory corrupted in its address space; the message, not the abort after it, is the reason.
The words of every release were read from glibc's malloc.c and debug/ and checked against the strings of the
libc.so.6 of Debian 12 (2.36), where tests/data/crash/heap was recorded.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ncclcheck.evidence.formats.source import AT, Format, Sample
from ncclcheck.evidence.types import Clue, Loc, Said, Who

# The message as 2.26 on prints it, alone on its line or behind a launcher's tag (torchrun's `[rank3]:`, Ray's
# `(Worker pid=N) `, srun -l's `3: `):
# a checking function's name and its finding, or one of the sentences without one. Bounded: linear on a hostile line.
_CHECKERS = ("free", "malloc", "realloc", "munmap_chunk", "mremap_chunk", "malloc_consolidate", "tcache_thread_shutdown",
             "_int_free", "_int_malloc", "_int_realloc", "_int_memalign", "memalign", "calloc")
_MESSAGE = (r"(?:" + "|".join(rf"{f}\(\): " for f in _CHECKERS) + r")[\w .()>!-]{3,80}"
            r"|double free or corruption \([!\w]{2,8}\)"
            r"|corrupted size vs\. prev_size(?: in fastbins| while consolidating)?"
            r"|corrupted double-linked list(?: \(not small\))?"
            r"|break adjusted to free malloc space")
HEAP = re.compile(rf"(?:^|\]:|\) |^\d{{1,6}}: )\s*(?P<message>{_MESSAGE})\s*$"
                  # up to 2.25: "*** Error in `%s': %s: 0x%s ***"
                  rf"|\*\*\* Error in `[^`']{{0,300}}': (?P<old>{_MESSAGE}): 0x[0-9a-f]{{1,16}} \*\*\*"
                  # 2.36 on: __malloc_assert
                  r"|(?P<assert>Fatal glibc error: malloc assertion failure in [\w ]{1,80}: .{1,200})")
# The fortified functions' and the stack protector's end (__fortify_fail): "*** %s ***: terminated" since 2.26,
# "*** %s ***: %s terminated" with the program's name before.
FORTIFY = re.compile(r"\*\*\* (?P<what>buffer overflow|stack smashing) detected \*\*\*: (?:[^\s]{1,300} )?terminated")
# ld.so's fatal error at a program's start: "%s: %s: %s%s%s%s%s" with the program's name, these words, the object
# and the error (and the errno's string).
LOADER = re.compile(r"(?P<loader>error while loading shared libraries: \S{1,300}: .{1,300})")
WORDS = ("free(): ", "malloc(): ", "realloc(): ", "munmap_chunk(): ", "mremap_chunk(): ", "malloc_consolidate(): ",
         "tcache_thread_shutdown(): ", "memalign(): ", "calloc(): ", "double free or corruption", "corrupted size vs",
         "corrupted double-linked", "break adjusted to free", "malloc assertion failure", " detected ***: ",
         "error while loading shared libraries")
_ANYONE = Who()  # the line's process: the parser puts the clue on it


def message(text: str) -> str | None:
    """glibc's words on this line (the heap check's message, the malloc assertion, the fortify failure), or None."""
    if (m := HEAP.search(text.strip())) is not None:  # the line's own prefix before it is the launcher's
        return m["message"] or m["old"] or m["assert"]
    if (f := FORTIFY.search(text)) is not None:
        return f"*** {f['what']} detected ***"
    if "error while loading" in text and (m := LOADER.search(text)) is not None:
        return m["loader"]
    return None


class Lines:
    """One input's glibc fatal lines, each read on its own."""

    def feed(self, text: str, loc: Loc) -> Iterable[Said]:
        said = message(text)
        return (Clue(_ANYONE, "glibc", said, loc),) if said is not None else ()


FORMAT = Format(
    name="glibc",
    words=WORDS,
    make=Lines,
    patterns=(HEAP, FORTIFY, LOADER),
    samples=(
        Sample("free(): double free detected in tcache 2", "tests/data/crash/heap/console.log:5",
               (Clue(_ANYONE, "glibc", "free(): double free detected in tcache 2", AT),)),
        Sample("free(): corrupted unsorted chunks", "glibc malloc/malloc.c (_int_free's check of the unsorted bin, "
               "malloc_printerr's \"%s\\n\" since 2.26)",
               (Clue(_ANYONE, "glibc", "free(): corrupted unsorted chunks", AT),)),
        Sample("double free or corruption (!prev)", "glibc malloc/malloc.c (_int_free), every release since 2.3",
               (Clue(_ANYONE, "glibc", "double free or corruption (!prev)", AT),)),
        Sample("corrupted size vs. prev_size", "glibc malloc/malloc.c (unlink_chunk), 2.26 on",
               (Clue(_ANYONE, "glibc", "corrupted size vs. prev_size", AT),)),
        Sample("*** Error in `python': munmap_chunk(): invalid pointer: 0x00007f3e4c0008c0 ***",
               "glibc <= 2.25 malloc/malloc.c, malloc_printerr: \"*** Error in `%s': %s: 0x%s ***\"",
               (Clue(_ANYONE, "glibc", "munmap_chunk(): invalid pointer", AT),)),
        Sample("Fatal glibc error: malloc assertion failure in sysmalloc: (old_top == initial_top (av) && old_size == 0)",
               "glibc 2.36 on malloc/malloc.c, __malloc_assert",
               (Clue(_ANYONE, "glibc", "Fatal glibc error: malloc assertion failure in sysmalloc: (old_top == "
                                       "initial_top (av) && old_size == 0)", AT),)),
        Sample("*** buffer overflow detected ***: terminated", "glibc 2.26 on debug/fortify_fail.c, __fortify_fail",
               (Clue(_ANYONE, "glibc", "*** buffer overflow detected ***", AT),)),
        Sample("*** stack smashing detected ***: python terminated", "glibc <= 2.25 debug/fortify_fail.c",
               (Clue(_ANYONE, "glibc", "*** stack smashing detected ***", AT),)),
        Sample("/opt/conda/bin/python: error while loading shared libraries: libpython3.11.so.1.0: cannot open shared "
               "object file: No such file or directory",
               "glibc elf/dl-error-skeleton.c (ld.so's fatal_error at a program's start), elf/dl-load.c's message",
               (Clue(_ANYONE, "glibc", "error while loading shared libraries: libpython3.11.so.1.0: cannot open shared "
                                       "object file: No such file or directory", AT),)),
    ),
)
