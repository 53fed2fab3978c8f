"""A step's statements through psycopg's libpq wrapper (``Connection.pgconn``), without a cursor.

A claim or a completion is one statement of SQL text (a tool's completion two, pipelined) on a held
autocommit connection (``held.py``). Through a cursor, psycopg's Python per statement (the cursor,
the query's conversion, a dumper per parameter, its prepared-statement bookkeeping, its wait loop, a
row maker, and for two statements its pipeline object) was an eighth of the instructions of a whole
step (``bench/instructions.py``: 2.28M -> 2.00M per step). Here a statement's text is converted once
(``%(name)s`` to ``$n``), prepared once per connection under a name of ours, and sent with
``send_query_prepared`` (several in libpq's pipeline mode, up to one ``Sync``: one round trip, one
implicit transaction); each column is decoded by the loader psycopg's own adapters give the
connection for its type, so rows hold exactly what a cursor returns (the JSON columns through the
engine's ``json_deserializer``). A parameter is typed as the cursor types it; one of a type this
module does not encode (anything but None, bool, int, float, str, and lists of str) sends the
statements through the cursor instead (``run_direct`` returns None before running anything), and so
does a statement the server refuses to prepare (it may need what an earlier statement of the same
call creates; the cursor raises the error if it is one).

Errors are psycopg's own (``psycopg.errors.error_from_result``; ``OperationalError`` for a lost
connection), so the caller's wrapping, disconnect detection and retries see what a cursor raises. A
prepared statement the server no longer has (a ``DISCARD ALL`` by a pooler) or whose plan the schema
changed under it is prepared again once. The connection stays non-blocking, as psycopg keeps it: the
waits are ``select`` calls, so other threads run and signals are handled meanwhile. A connection
left mid-protocol (a lost server, an exception between sending and reading) is closed, so the caller
discards it.
"""

from __future__ import annotations

import re
import select
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from functools import cache
from typing import Any, NamedTuple

from psycopg import Connection, errors, pq

Rows = list[dict[str, Any]]
Statements = Sequence[tuple[str, Mapping[str, Any]]]

_PLACEHOLDER = re.compile(r"%\((\w+)\)s|%%")
_INT8, _FLOAT8, _BOOL, _UNKNOWN = 20, 701, 16, 0
_RESTATE = frozenset({b"26000", b"0A000"})  # no such prepared statement; cached plan's result type changed


class _Prepared:
    """The statements prepared on one connection, and the loaders of its result columns."""

    __slots__ = ("count", "loaders", "names")

    def __init__(self) -> None:
        self.names: dict[tuple[str, tuple[int, ...]], bytes] = {}
        self.loaders: dict[tuple[int, ...], list[Callable[[bytes], Any]]] = {}
        self.count = 0  # names are never reused: a statement prepared again gets a new one


_PREPARED: weakref.WeakKeyDictionary[Connection[Any], _Prepared] = weakref.WeakKeyDictionary()


@cache
def _positional(sql: str) -> tuple[bytes, tuple[str, ...]] | None:
    """``sql`` with ``%(name)s`` placeholders as ``$n`` (one number per name) and ``%%`` as ``%``, and
    the names in order; None for any other use of ``%`` (psycopg's other placeholders)."""
    names: list[str] = []

    def convert(match: re.Match[str]) -> str:
        name = match.group(1)
        if name is None:
            return "%"
        if name not in names:
            names.append(name)
        return f"${names.index(name) + 1}"

    if "%" in _PLACEHOLDER.sub("", sql):
        return None
    return _PLACEHOLDER.sub(convert, sql).encode(), tuple(names)


def _array(values: list[Any]) -> bytes | None:
    if not all(type(value) is str and "\x00" not in value for value in values):
        return None
    quoted = ('"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"' for value in values)
    return ("{" + ",".join(quoted) + "}").encode()


def _encode(value: Any) -> tuple[bytes | None, int] | None:
    """(text, type oid) of one parameter, typed as psycopg's cursor types it (an int as int8 rather
    than the smallest type that holds it); None: not handled here. A str holding a NUL goes to the
    cursor, which refuses it (libpq would cut a text parameter at the NUL)."""
    if value is None:
        return None, _UNKNOWN
    kind = type(value)
    if kind is str:
        return (None if "\x00" in value else (value.encode(), _UNKNOWN))  # untyped: the server infers
    if kind is bool:
        return (b"t" if value else b"f"), _BOOL
    if kind is int:
        return str(value).encode(), _INT8
    if kind is float:
        return repr(value).encode(), _FLOAT8
    if kind is list:  # (a tuple is a record to psycopg)
        text = _array(value)
        return None if text is None else (text, _UNKNOWN)  # an array literal, cast in the SQL
    return None


def run_direct(raw: Connection[Any], statements: Statements) -> list[Rows] | None:
    """Run ``statements`` on ``raw`` (idle, in autocommit) in one round trip — several in libpq's
    pipeline mode, one implicit transaction up to its ``Sync`` — and return the rows of each (``[]``
    for a statement returning none); None when a parameter is of a type this module leaves to the
    cursor (nothing was sent then). Raises what psycopg raises for the statement that failed."""
    bound = []
    for sql, params in statements:
        statement = _bind(sql, params)  # None: the cursor's (it also raises a missing parameter)
        if statement is None:
            return None
        bound.append(statement)
    prepared = _PREPARED.get(raw)
    if prepared is None:
        prepared = _PREPARED[raw] = _Prepared()
    results = _send(raw, prepared, bound)
    failed = None if results is None else _failed(results)
    if failed is not None and failed.error_field(pq.DiagnosticField.SQLSTATE) in _RESTATE:
        # Gone from the server, or planned for another schema: prepared again, under new names (an
        # implicit transaction that failed wrote nothing, so the statements are simply run again).
        prepared.names.clear()
        results = _send(raw, prepared, bound)
        failed = None if results is None else _failed(results)
    if results is None:
        return None
    if failed is not None:
        raise _error(raw, failed)
    return [_rows(raw, prepared, result) for result in results]


def _send(raw: Connection[Any], prepared: _Prepared, bound: list[_Bound]) -> list[pq.abc.PGresult] | None:
    """The statements' results; None when the server refused to prepare one (nothing was run)."""
    names = []
    for statement in bound:
        name = _prepare(raw, prepared, statement)
        if name is None:
            return None
        names.append(name)
    values = [statement.values for statement in bound]
    return _exec(raw, names[0], values[0]) if len(names) == 1 else _pipeline(raw, names, values)


def _failed(results: list[pq.abc.PGresult]) -> pq.abc.PGresult | None:
    return next((result for result in results if result.status == pq.ExecStatus.FATAL_ERROR), None)


class _Bound(NamedTuple):
    """A statement ready to send: its ``$n`` text, its parameters' texts and type oids."""

    sql: str
    text: bytes
    values: list[bytes | None]
    types: tuple[int, ...]


def _bind(sql: str, params: Mapping[str, Any]) -> _Bound | None:
    positional = _positional(sql)
    if positional is None:
        return None
    text, names = positional
    values: list[bytes | None] = []
    types: list[int] = []
    for name in names:
        encoded = _encode(params[name]) if name in params else None
        if encoded is None:
            return None
        values.append(encoded[0])
        types.append(encoded[1])
    return _Bound(sql, text, values, tuple(types))


def _prepare(raw: Connection[Any], prepared: _Prepared, statement: _Bound) -> bytes | None:
    """The name ``statement`` is prepared under on ``raw``, preparing it on first use; None when the server
    refuses: the cursor runs the statements then, and raises the error if it is one (a statement may
    also need what an earlier one of the same call creates, which a cursor's pipeline allows)."""
    key = (statement.sql, statement.types)
    name = prepared.names.get(key)
    if name is None:
        prepared.count += 1
        name = f"lunora_{prepared.count}".encode()
        with _exchange(raw) as pgconn:
            pgconn.send_prepare(name, statement.text, statement.types)
            _flush(pgconn)
            result = _result(pgconn)
        if result.status == pq.ExecStatus.FATAL_ERROR:
            if raw.pgconn.status == pq.ConnStatus.BAD:
                raise _error(raw, result)
            return None
        prepared.names[key] = name
    return name


def _exec(raw: Connection[Any], name: bytes, values: list[bytes | None]) -> list[pq.abc.PGresult]:
    with _exchange(raw) as pgconn:
        pgconn.send_query_prepared(name, values)
        _flush(pgconn)
        return [_result(pgconn)]


def _pipeline(
    raw: Connection[Any], names: list[bytes], values: list[list[bytes | None]]
) -> list[pq.abc.PGresult]:
    with _exchange(raw) as pgconn:
        pgconn.enter_pipeline_mode()
        for name, params in zip(names, values, strict=True):
            pgconn.send_query_prepared(name, params)
        pgconn.pipeline_sync()
        _flush(pgconn)
        results = [_result(pgconn) for _ in names]
        synced = _next(pgconn)
        if synced is None or synced.status != pq.ExecStatus.PIPELINE_SYNC:
            raise errors.OperationalError(pgconn.get_error_message())
        pgconn.exit_pipeline_mode()
    return results


@contextmanager
def _exchange(raw: Connection[Any]) -> Iterator[pq.abc.PGconn]:
    """``raw``'s libpq connection for one exchange; closed when the exchange is cut short (a lost
    server, an exception between sending and reading): left mid-protocol, it is of no further use."""
    try:
        yield raw.pgconn
    except BaseException:
        raw.close()
        raise


# psycopg keeps its connections non-blocking, and so does this module: libpq never blocks holding the
# interpreter's lock (other threads run, signals are handled); the waits are ``select`` calls.
def _flush(pgconn: pq.abc.PGconn) -> None:
    """Send what libpq holds in its buffer (reading what arrives meanwhile, as libpq asks)."""
    while pgconn.flush():
        readable, _, _ = select.select([pgconn.socket], [pgconn.socket], [])
        if readable:
            pgconn.consume_input()


def _next(pgconn: pq.abc.PGconn) -> pq.abc.PGresult | None:
    """The next result (None: the end of a statement's results), waiting for it."""
    while pgconn.is_busy():
        select.select([pgconn.socket], [], [])
        pgconn.consume_input()
    return pgconn.get_result()


def _result(pgconn: pq.abc.PGconn) -> pq.abc.PGresult:
    """One statement's result, and the end of its results."""
    result = _next(pgconn)
    if result is None or _next(pgconn) is not None:
        raise errors.OperationalError(pgconn.get_error_message())
    return result


def _error(raw: Connection[Any], result: pq.abc.PGresult) -> errors.Error:
    """The exception psycopg's cursor raises for ``result``: ``OperationalError`` for a lost
    connection (what the store treats as an outage), else the error of the result's SQLSTATE."""
    if raw.pgconn.status == pq.ConnStatus.BAD:
        return errors.OperationalError(result.get_error_message())
    return errors.error_from_result(result, encoding=raw.info.encoding)


def _rows(raw: Connection[Any], prepared: _Prepared, result: pq.abc.PGresult) -> Rows:
    if result.status != pq.ExecStatus.TUPLES_OK:
        return []
    columns = range(result.nfields)
    types = tuple(result.ftype(column) for column in columns)
    loaders = prepared.loaders.get(types)
    if loaders is None:
        adapters = raw.adapters
        # As psycopg's cursor: the type's text loader, or the one for an unknown type (text as str).
        loaders = [(adapters.get_loader(oid, pq.Format.TEXT) or adapters.get_loader(0, pq.Format.TEXT))(
            oid, raw).load for oid in types]  # type: ignore[misc]
        prepared.loaders[types] = loaders
    keys = [(result.fname(column) or b"").decode(raw.info.encoding) for column in columns]
    rows: Rows = []
    for row in range(result.ntuples):
        values = (result.get_value(row, column) for column in columns)
        rows.append({key: None if value is None else load(value)
                     for key, load, value in zip(keys, loaders, values, strict=True)})
    return rows
