"""``postgres_fts``: PostgreSQL's own full-text search as a method, so a user of Postgres (pgvector's
neighbour) sees what its ranking costs them against BM25 on the same chunks and questions.

Config shape::

    {name: pg, type: postgres_fts, params: {uri: "postgresql://me@db.example:5432/rag", password_env: PGPASS}}

``uri`` names the server and database without a password (one written there is refused, unechoed);
``password_env`` names the environment variable holding it (unset: no password, or libpq's own
``PGPASSWORD`` / ``~/.pgpass``); the password is redacted from every byte written or printed
(:mod:`rag.secrets`). Client: psycopg 3.

**Index.** The run's chunks go into a table of their own, ``rag_bench_fts_<hash of the chunks and the
text search configuration>`` (or ``table``), ``(chunk_id text primary key, body text, tsv tsvector
GENERATED ALWAYS AS (to_tsvector('<config>', body)) STORED)`` with a GIN index on ``tsv``, created,
filled (COPY) and indexed in one transaction: the table exists whole or not at all, and a later run
over the same chunks reuses it.

**Search.** One statement per question (:func:`search_sql`, the text ``psql`` runs by hand in the
tests)::

    WITH q AS (SELECT <query form> AS query)
    SELECT chunk_id, <rank>(tsv, q.query, <normalization>) AS score FROM <table>, q
    WHERE tsv @@ q.query ORDER BY score DESC, chunk_id COLLATE "C" DESC LIMIT <k>

``rank``: ``ts_rank_cd`` (cover density, the default) or ``ts_rank``; ``normalization`` its document
length bit mask (0: none, PostgreSQL's default); ``config`` the text search configuration
(``english``: Snowball stemming and stop words). ``query``, the query form:

- ``or`` (the default): the OR of the lexemes ``to_tsvector(config, question)`` holds: any chunk
  sharing one stemmed word matches, and the rank orders them. The form LlamaIndex's ``PGVectorStore``
  uses for its text (hybrid) search (``plainto_tsquery``'s lexemes with ``&`` replaced by ``|``);
- ``plain``: ``plainto_tsquery(config, question)``, every word ANDed;
- ``websearch``: ``websearch_to_tsquery(config, question)``, every word ANDed unless the question
  writes ``or`` (Supabase's hybrid search guide uses it).

An AND of every word of a natural-language question matches almost no chunk (docs/your-retriever.md
has the measurement), hence the default. ``ts_rank`` and ``ts_rank_cd`` return ``real`` (float32), the
scores the tie rule ranks; ``chunk_id COLLATE "C"`` is the code-point order of the id rule. A
question with no match has an empty list, as BM25's.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import Field, field_validator

from rag.endpoints.settings import key_variable_name
from rag.errors import BenchError, ConfigError
from rag.io_utils import sha256_strings
from rag.retrievers.base import RETRIEVERS, IndexStorage, Retriever, RetrieverParams
from rag.retrievers.ranking import ranking_from_pairs
from rag.secrets import Redactor
from rag.types import Chunk, Ranking

log = logging.getLogger(__name__)
TABLE_PREFIX = "rag_bench_fts_"

QUERY_FORMS = {
    "or": ("(SELECT coalesce(string_agg('''' || replace(replace(lexeme, '\\', '\\\\'), '''', '''''') || '''', ' | '), '')"
           "::tsquery FROM unnest(to_tsvector(%(config)s::regconfig, %(question)s)))"),
    "plain": "plainto_tsquery(%(config)s::regconfig, %(question)s)",
    "websearch": "websearch_to_tsquery(%(config)s::regconfig, %(question)s)",
}


class PostgresFtsParams(RetrieverParams):
    """Where the server is and how it ranks (module docstring)."""

    uri: str = Field(min_length=1)
    password_env: str | None = None
    config: str = Field("english", pattern=r"^[A-Za-z_][A-Za-z0-9_.]*$")
    rank: Literal["ts_rank_cd", "ts_rank"] = "ts_rank_cd"
    normalization: int = Field(0, ge=0, le=63)
    query: Literal["or", "plain", "websearch"] = "or"
    table: str | None = Field(None, pattern=r"^[a-z_][a-z0-9_]{0,62}$")
    connect_timeout_s: int = Field(10, gt=0)

    _variable_name = field_validator("password_env")(lambda name: None if name is None else key_variable_name(name))

    @field_validator("uri")
    @classmethod
    def _postgres_uri(cls, uri: str) -> str:
        try:
            parts = urlsplit(uri)
        except ValueError:
            raise ValueError("not a valid URI; expected postgresql://user@host:port/database") from None
        if parts.scheme not in ("postgresql", "postgres"):
            raise ValueError("expected a postgresql://user@host:port/database URI")
        if parts.password is not None:
            raise ValueError("holds a password; expected the password in the environment variable that "
                             "password_env names (the value is not shown)")
        return uri


def search_sql(table: str, query: str, rank: str) -> str:
    """The statement that ranks one question (module docstring), with ``%(config)s``, ``%(question)s``,
    ``%(normalization)s`` and ``%(k)s`` parameters; ``table`` is a checked identifier."""
    return (f"WITH q AS (SELECT {QUERY_FORMS[query]} AS query) "
            f"SELECT chunk_id, {rank}(tsv, q.query, %(normalization)s) AS score FROM {table}, q "
            f"WHERE tsv @@ q.query ORDER BY score DESC, chunk_id COLLATE \"C\" DESC LIMIT %(k)s")


def table_name(chunks: Sequence[Chunk], config: str) -> str:
    """The default table of these chunks under this text search configuration."""
    return TABLE_PREFIX + sha256_strings([config, *(f"{c.chunk_id}\x00{c.text}" for c in chunks)])[:24]


@RETRIEVERS.register("postgres_fts")
class PostgresFtsRetriever(Retriever):
    """Ranks with PostgreSQL's full-text search (module docstring)."""

    Params = PostgresFtsParams
    params: PostgresFtsParams

    def __init__(self, name: str, params: PostgresFtsParams):
        super().__init__(name, params)
        self.table = params.table
        self._connection: Any = None
        self._password: str | None = None
        self._redactor = Redactor([])

    @property
    def key(self) -> str:
        return f"retrievers.{self.name}.params"

    def connect(self) -> Any:
        """The open connection (opened on first use; the password read from ``password_env``)."""
        import psycopg

        if self._connection is not None and not self._connection.closed:
            return self._connection
        if self.params.password_env is not None:
            self._password = os.environ.get(self.params.password_env) or None
            if self._password is None:
                raise ConfigError(f"{self.key}.password_env", f"the environment variable {self.params.password_env} "
                                  "is not set; expected the database password in it")
            self._redactor = Redactor([self._password])
        try:
            self._connection = psycopg.connect(self.params.uri, password=self._password,
                                               connect_timeout=self.params.connect_timeout_s, autocommit=False)
        except psycopg.Error as exc:
            raise BenchError(f"{self.key}.uri: {self.failure(exc)}; expected a running PostgreSQL server") from None
        return self._connection

    def failure(self, exc: BaseException) -> str:
        """``exc`` as one redacted line."""
        return self._redactor.excerpt(" ".join(f"{type(exc).__name__}: {exc}".split()), 500)

    def index(self, chunks: Sequence[Chunk], storage: IndexStorage) -> None:
        """The chunks' table (module docstring), created unless it exists."""
        import psycopg
        from psycopg import sql

        self.table = self.params.table or table_name(chunks, self.params.config)
        connection = self.connect()
        try:
            with connection.transaction():
                exists = connection.execute("SELECT to_regclass(%s) IS NOT NULL", [self.table]).fetchone()[0]
                if exists:
                    return
                table = sql.Identifier(self.table)
                connection.execute(sql.SQL(
                    "CREATE TABLE {} (chunk_id text PRIMARY KEY, body text NOT NULL, tsv tsvector GENERATED ALWAYS "
                    "AS (to_tsvector({}::regconfig, body)) STORED)").format(table, sql.Literal(self.params.config)))
                with connection.cursor().copy(sql.SQL("COPY {} (chunk_id, body) FROM STDIN").format(table)) as copy:
                    for chunk in chunks:
                        copy.write_row((chunk.chunk_id, chunk.text))
                connection.execute(sql.SQL("CREATE INDEX {} ON {} USING GIN (tsv)").format(
                    sql.Identifier(f"{self.table}_tsv"), table))
            log.info("postgres_fts %s: loaded %d chunks into %s", self.name, len(chunks), self.table)
        except psycopg.Error as exc:
            connection.rollback()
            raise BenchError(f"{self.key}: loading the chunks into {self.table} failed: {self.failure(exc)}") from None

    def search(self, queries: Sequence[str], k: int) -> list[Ranking]:
        import psycopg

        if self.table is None:
            raise BenchError(f"retriever {self.name!r}: search() called before index()")
        statement = search_sql(self.table, self.params.query, self.params.rank)
        connection = self.connect()
        rankings = []
        try:
            with connection.cursor() as cursor:
                for question in queries:
                    cursor.execute(statement, {"config": self.params.config, "question": question,
                                               "normalization": self.params.normalization, "k": k})
                    rankings.append(ranking_from_pairs(cursor.fetchall(), k))
            connection.commit()
        except psycopg.Error as exc:
            connection.rollback()
            raise BenchError(f"{self.key}: the search failed on {self.table}: {self.failure(exc)}") from None
        return rankings
