"""The code of a module as text, for the rules' tests before parsing: can a file hold a finding?

Parsing is most of the lint's time, and most files hold nothing a rule reports. Each rule has
a test on the text (``Rule.may_report``) that every file it reports on passes: words its
findings cannot do without (``except``, ``lru_cache``, ``lambda``), the bound-method reads,
nested functions and recursion it looks for. A file that no selected rule's test passes is
not parsed (tests/test_lint_prefilter.py checks each test against each rule's findings).

:class:`CodeText` is the source with comments and string literals blanked, an f-string kept
as the names in its replacement fields, and backslash continuations joined: what remains is
the module's code tokens, so a word found here is a name, keyword or attribute of the code.
Lines that start a statement are told apart by bracket depth, which makes the extent of each
``def``/``class`` block, and so which function or class a ``def`` sits in, exact. Where the
text could be lexed differently by Python (a non-ASCII identifier, a form feed, an
unterminated string, unbalanced brackets, an f-string nesting its own quotes, a ``def`` that
does not start a line), :attr:`CodeText.unsure` is set and the file is parsed.
"""

from __future__ import annotations

import bisect
import functools
import re
from dataclasses import dataclass, field

__all__ = ["Block", "CodeText"]

# A comment, or a string literal of any kind (the prefix is read from the text before it).
# One flat alternation, each branch starting with its first character: the engine then skips
# to those characters (a group around the branches makes it twice as slow).
_LEXEME = re.compile(
    r"#[^\n]*"
    r'|"""[^"\\]*(?:(?:\\[\s\S]|"(?!""))[^"\\]*)*"""'
    r"|'''[^'\\]*(?:(?:\\[\s\S]|'(?!''))[^'\\]*)*'''"
    r'|"[^"\\\n]*(?:\\[\s\S][^"\\\n]*)*"'
    r"|'[^'\\\n]*(?:\\[\s\S][^'\\\n]*)*'"
)
_FIELD = re.compile(r"\{\{|\}\}|\{|\}")
# What an f-string's replacement fields turn into: their text with no quotes, brackets,
# backslashes or line breaks (so the line structure around them is unchanged).
_NOT_CODE = re.compile(r"""[\s"'#\\()\[\]{}]+""")
# Patterns start with a literal, which the regular expression engine finds fast; what must
# come before it (not part of a longer name) is checked on each match (`_whole`).
_DEF = re.compile(r"def[ \t]+([A-Za-z_]\w*)")
_CLASS = re.compile(r"class[ \t]+([A-Za-z_]\w*)")
_INDENTED_DECORATOR = re.compile(r"\n[ \t]+(@[^\n]*)")
_ATTRIBUTE_READ = re.compile(r"\.\s*([A-Za-z_]\w*)(?!\w)(?![ \t]*\()")
# Decorators that make a `def` in a class something other than a plain method (the words
# `shapes.class_methods` looks for).
_NOT_BOUND = ("property", "staticmethod", "classmethod", "setter", "getter", "deleter")
_OPENERS, _CLOSERS = "([{", ")]}"


@functools.lru_cache(maxsize=64)
def _dedent(width: int) -> re.Pattern[str]:
    """A line break followed by a line of code indented at most ``width``."""
    return re.compile(rf"\n[ \t]{{0,{width}}}(?=[^ \t\n])")


@functools.lru_cache(maxsize=4096)
def load_pattern(name: str) -> re.Pattern[str]:
    """``name`` read (not a keyword argument or an assignment's target); `_whole` checks
    that it is no attribute."""
    return re.compile(re.escape(name) + r"(?!\w)(?![ \t]*=(?!=))")


@functools.lru_cache(maxsize=4096)
def held_pattern(name: str) -> re.Pattern[str]:
    """``name`` read and neither called nor looked into: a value passed on."""
    return re.compile(re.escape(name) + r"(?!\w)(?![ \t]*(?:[(.]|=(?!=)))")


@functools.lru_cache(maxsize=4096)
def attribute_read_pattern(name: str) -> re.Pattern[str]:
    """``.name`` read and not called."""
    return re.compile(r"\.\s*" + re.escape(name) + r"(?!\w)(?![ \t]*\()")


@functools.lru_cache(maxsize=1024)
def word_pattern(word: str) -> re.Pattern[str]:
    """``word`` not continued by a longer name (`whole_match` checks what comes before)."""
    return re.compile(re.escape(word) + r"(?!\w)")


def whole_match(
    pattern: re.Pattern[str], code: str, start: int = 0, end: int | None = None, *, dot: bool
) -> re.Match[str] | None:
    """The first match of ``pattern`` in ``code[start:end]`` that does not continue a longer
    name (nor follow a ``.``, unless ``dot``)."""
    end = len(code) if end is None else end
    found = pattern.search(code, start, end)
    while found is not None:
        at = found.start()
        before = code[at - 1] if at > 0 else "\n"
        if not (before.isalnum() or before == "_" or (before == "." and not dot)):
            return found
        found = pattern.search(code, at + 1, end)
    return None


@dataclass(eq=False)
class Block:
    """A ``def`` or ``class`` statement: where its line starts, its indent and its name."""

    kind: str
    name: str
    start: int
    name_end: int
    indent: int
    decorators: str
    parent: Block | None = None
    _end: int | None = field(default=None, repr=False)
    _statements: list[int] | None = field(default=None, repr=False)


class CodeText:
    """The code tokens of one module's source; see the module docstring."""

    def __init__(self, source: str) -> None:
        if "\r" in source:
            source = source.replace("\r\n", "\n").replace("\r", "\n")
        self.unsure = "\x00" in source or "\f" in source
        self.code = self._blank(source).replace("\\\n", " ")
        code = self.code
        if not self.unsure:
            self.unsure = (
                not code.isascii()
                or "'" in code
                or '"' in code
                or "\\" in code
                or sum(map(code.count, _OPENERS)) != sum(map(code.count, _CLOSERS))
            )
        self._blocks: list[Block] | None = None
        self.memo: dict[str, object] = {}

    def _blank(self, source: str) -> str:
        """The source without comments, each string a ``0``, each f-string the names in its
        replacement fields."""
        parts: list[str] = []
        append = parts.append
        at = 0
        for lexeme in _LEXEME.finditer(source):
            start = lexeme.start()
            append(source[at:start])
            at = lexeme.end()
            if source[start] == "#":
                continue
            last = source[start - 1 : start]
            if last.isalnum() or last == "_":
                append(self._prefixed(source[max(0, start - 3) : start], lexeme.group()))
            else:
                append("0 ")
        append(source[at:])
        return "".join(parts)

    def _prefixed(self, before: str, string: str) -> str:
        """A string after a name: an f-string when the name is its prefix, else a string
        after a keyword (``if"x"``), kept a word apart."""
        letters = ""
        for char in reversed(before[-3:]):
            if not (char.isalnum() or char == "_"):
                break
            letters = char + letters
        if len(letters) > 2 or "f" not in letters.lower() or not set(letters) <= set("rRfF"):
            return " 0 "
        quote = 3 if string[:3] in ('"""', "'''") else 1
        body = string[quote:-quote]
        depth, fields, last = 0, [], 0
        for brace in _FIELD.finditer(body):
            mark = brace.group()
            if len(mark) == 2 and depth == 0:
                continue
            if mark[0] == "{":
                if depth == 0:
                    last = brace.end()
                depth += len(mark)
            else:
                depth -= len(mark)
                if depth == 0:
                    fields.append(body[last : brace.start()])
                elif depth < 0:
                    break
        if depth != 0:  # an f-string that nests its own quotes (3.12+): lexed apart
            self.unsure = True
        return " " + _NOT_CODE.sub(" ", " ".join(fields)) + " 0 "

    # -- words -------------------------------------------------------------------------------

    def has_word(self, *words: str) -> bool:
        """Whether any of ``words`` occurs as a whole word of the code."""
        code = self.code
        return any(
            w in code and whole_match(word_pattern(w), code, dot=True) is not None for w in words
        )

    def search(self, pattern: re.Pattern[str]) -> bool:
        """Whether ``pattern`` matches somewhere in the code."""
        return pattern.search(self.code) is not None

    def search_whole(self, pattern: re.Pattern[str]) -> bool:
        """Whether ``pattern`` matches where it does not continue a longer name."""
        return whole_match(pattern, self.code, dot=True) is not None

    def attribute_reads(self) -> frozenset[str]:
        """Attribute names read and not called (``obj.name`` not followed by ``(``)."""
        found = self.memo.get("reads")
        if not isinstance(found, frozenset):
            found = self.memo["reads"] = frozenset(_ATTRIBUTE_READ.findall(self.code))
        return found

    def indented_decorators(self) -> list[str]:
        """The text of each line that starts, indented, with ``@`` (decorators in a body)."""
        return _INDENTED_DECORATOR.findall(self.code) if "@" in self.code else []

    # -- blocks ------------------------------------------------------------------------------

    def blocks(self) -> list[Block]:
        """Every ``def`` and ``class`` in source order, each with the one it sits in."""
        if self._blocks is None:
            self._blocks = self._find_blocks()
        return self._blocks

    def _find_blocks(self) -> list[Block]:
        code = self.code
        blocks: list[Block] = []
        stack: list[Block] = []
        found_all = (
            [*_DEF.finditer(code), *_CLASS.finditer(code)]
            if "class" in code
            else [*_DEF.finditer(code)]
        )
        found_all.sort(key=lambda m: m.start())
        for found in found_all:
            at = found.start()
            line = code.rfind("\n", 0, at) + 1
            prefix = code[line:at]
            head = prefix.lstrip(" \t")
            if head and (head[:5] != "async" or head[5:].strip(" \t") or head == "async"):
                continue  # a longer name (`undef x`) or an attribute: no statement
            indent = len(prefix) - len(head)
            # A block holds the `def`s up to its end: a dedent at bracket depth 0.
            while stack and (stack[-1].indent >= indent or self.end_of(stack[-1]) <= line):
                stack.pop()
            kind = "class" if code.startswith("class", at) else "def"
            parent = stack[-1] if stack else None
            in_class = kind == "def" and parent is not None and parent.kind == "class"
            block = Block(
                kind,
                found.group(1),
                line,
                found.end(1),
                indent,
                self._decorators(line) if in_class else "",
                parent,
            )
            blocks.append(block)
            stack.append(block)
        return blocks

    def _decorators(self, line: int) -> str:
        """The decorator lines above a ``def``, blank lines (comments) aside: lines that start
        with ``@`` and close every bracket they open (a continuation line would close an
        earlier one)."""
        code = self.code
        lines = []
        end = line - 1
        while end > 0:
            start = code.rfind("\n", 0, end) + 1
            text = code[start:end].strip()
            if text and (
                not text.startswith("@")
                or sum(map(text.count, _OPENERS)) != sum(map(text.count, _CLOSERS))
            ):
                break
            if text:
                lines.append(text)
            end = start - 1
        return "\n".join(lines)

    def end_of(self, block: Block) -> int:
        """Where ``block``'s statement ends: the first line after it at bracket depth 0
        that is indented no deeper than its ``def``/``class`` line."""
        if block._end is None:
            block._end = self.statement_end(block.start, block.indent)
        return block._end

    def statement_end(self, start: int, indent: int) -> int:
        """The end of the (compound) statement whose line starts at ``start``."""
        code = self.code
        dedent = _dedent(indent)
        depth, at = 0, start
        while True:
            found = dedent.search(code, at)
            if found is None:
                return len(code)
            cut = found.start()
            depth += sum(code.count(c, at, cut) for c in _OPENERS)
            depth -= sum(code.count(c, at, cut) for c in _CLOSERS)
            if depth <= 0:
                return cut + 1
            at = cut + 1

    def methods(self) -> frozenset[str]:
        """Names of ``def``s in a class body, but for properties, static and class methods."""
        return frozenset(
            b.name
            for b in self.blocks()
            if b.kind == "def"
            and b.parent is not None
            and b.parent.kind == "class"
            and not any(word in b.decorators for word in _NOT_BOUND)
        )

    def nested_functions(self) -> list[Block]:
        """``def``s that sit in a function."""
        return [
            b
            for b in self.blocks()
            if b.kind == "def" and b.parent is not None and b.parent.kind == "def"
        ]

    def innermost(self, position: int) -> Block | None:
        """The innermost ``def`` or ``class`` whose block holds ``position``."""
        blocks = self.blocks()
        starts = self.memo.get("starts")
        if not isinstance(starts, list):
            starts = self.memo["starts"] = [b.start for b in blocks]
        index = bisect.bisect_right(starts, position) - 1
        while index >= 0:
            if self.end_of(blocks[index]) > position:
                return blocks[index]
            index -= 1
        return None

    def statement_starts(self, block: Block) -> list[int]:
        """Where the statements of ``block`` start (lines that start at bracket depth 0)."""
        if block._statements is None:
            code = self.code
            starts: list[int] = []
            depth, at, end = 0, block.start, self.end_of(block)
            while at < end:
                stop = code.find("\n", at, end) + 1 or end
                if depth == 0:
                    starts.append(at)
                depth += sum(code.count(c, at, stop) for c in _OPENERS)
                depth -= sum(code.count(c, at, stop) for c in _CLOSERS)
                at = stop
            block._statements = starts
        return block._statements
