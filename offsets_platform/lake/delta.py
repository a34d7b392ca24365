"""Reading and writing the Delta tables: the one module that does table IO.

Two writers share the tables, each where it fits:
- delta-rs (`deltalake`), which needs no JVM, writes bronze (ingest, snapshots), the cleanup
  records and the runner's `model_runs`, and reads any table for the quick views, the report, the
  metrics and the plans (`Lake.query`, `Lake.read_arrow`);
- Delta's own Spark reader and writer (delta-spark, in every session offsets_platform.lake.spark
  starts) read the models' sources and refs at pinned versions, read the rows appended to a source
  since a version through Delta's change data feed, and write each model's result (an overwrite,
  or MERGE INTO for an incremental model): `Lake.spark_*`. Those methods can also hand a small
  table's rows, read with delta-rs, to Spark, and write a small result back with delta-rs
  (`via_arrow`): every Delta operation of delta-spark runs Spark jobs to rebuild the table's
  state (about a second a model here, however few its rows), where delta-rs takes milliseconds.
Both keep to the table features both support: no deletion vectors, no column mapping
(tests/lake/test_delta_interop.py reads every kind of write of each with the other).

Only writes (append, overwrite, merge) create a table. Reading one that no write has created yet
reads it empty, with its registered schema, and leaves the lake as it was: a report or a plan
that looks at a fresh lake must not change it. A reader to whom an empty table would be a false
all-clear asks `Lake.require` first.
"""

from __future__ import annotations

import tempfile
import threading
from contextlib import contextmanager
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Callable, Iterable, Iterator, Mapping, TypeVar

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
from deltalake import DeltaTable, Field, QueryBuilder, write_deltalake

from offsets_platform.lake.spark import to_arrow
from offsets_platform.lake.sql_literals import spark_identifier
from offsets_platform.lake.storage import S3Access, check_reachable, is_object_store, local_leases_folder, normalise_uri
from offsets_platform.lake.tables import TABLES, TableSpec, table_spec, with_model_tables

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

T = TypeVar("T")


# Opening a table reads every commit since its last checkpoint (about 0.4 ms each), and a refresh
# opens tables some 170 times; Delta's default of a checkpoint every 100 commits made opening
# model_runs or a bronze table 20-30 ms instead of 5.
# The change data feed is how an incremental model reads the rows appended to a source since its
# last run (`Lake.spark_read_appended`); appends need no extra files for it.
CHANGE_DATA_FEED = "delta.enableChangeDataFeed"
TABLE_PROPERTIES = {"delta.checkpointInterval": "10", CHANGE_DATA_FEED: "true"}
# The userMetadata of a prune's commit (`Lake.spark_delete_pruned`), set through Delta's Spark
# setting for the commits a session makes.
PRUNE_COMMIT = "offsets_platform prune"
_USER_METADATA = "spark.databricks.delta.commitInfo.userMetadata"
# delta-rs merges a small result into a table of at most this much data in milliseconds where a
# MERGE by Delta's Spark writer costs about a second; a larger table is left to Spark, which does
# not read it whole into one process.
MERGE_VIA_ARROW_MAX_BYTES = 64 * 1024 * 1024


class Lake:
    """The Delta tables under one root folder (`<root>/<layer>/<table>`): the lake's own tables
    and the model tables it was handed, since the model project that declares those depends on
    the lake and cannot be looked up from here (`models.project.lake_for_models` hands over the
    shipped project's).

    The root is a local folder, or an `s3://bucket/prefix` URI (lake/storage.py: the connection
    comes from the environment, or `access`). A lake on object storage keeps its leases in a
    local folder (`leases`, default `<home>/leases/<bucket>/<prefix>`): flock needs a local file
    system, so processes exclude each other there only when they run on one host.
    """

    def __init__(self, root: str | Path, model_tables: Mapping[str, TableSpec] | None = None, *,
                 leases: str | Path | None = None, access: S3Access | None = None):
        self.remote = is_object_store(root)
        if self.remote:
            self.root: str | Path = normalise_uri(str(root))
            self.access: S3Access | None = access or S3Access.from_env()
            self._options: dict[str, str] | None = self.access.delta_options()
            if leases is None:
                from offsets_platform.settings import Settings

                leases = local_leases_folder(Settings.from_env().home, self.root)
            self.leases = Path(leases).absolute()
        else:
            self.root = Path(root).absolute()
            self.access, self._options = None, None
            self.leases = Path(leases).absolute() if leases is not None else self.root
        self._checked = not self.remote  # whether the endpoint was seen to answer
        self._spark_configured: set[int] = set()  # the sessions given s3a's settings (by id)
        self._filesystem: pafs.FileSystem | None = None  # pyarrow's S3 filesystem, made on first use
        self._model_tables = dict(model_tables or {})
        self.tables: Mapping[str, TableSpec] = MappingProxyType(with_model_tables(TABLES, self._model_tables))
        # Tables once opened are kept and caught up rather than opened again: opening replays the
        # log from its last checkpoint (25-40 ms for a bronze table or model_runs), catching up
        # lists the commits since (2-5 ms), and a model refresh reads tables some 160 times.
        self._open: dict[str, DeltaTable] = {}
        self._open_lock = threading.Lock()  # model runs use one lake from several threads

    def with_model_tables(self, model_tables: Mapping[str, TableSpec]) -> "Lake":
        """A lake on the same root that also knows these model tables (this one when it knows them
        already), so a runner of another project need not change the lake it was given; a name
        that already means another table is a ValueError."""
        if all(self.tables.get(name) == spec for name, spec in model_tables.items()):
            return self
        return Lake(self.root, with_model_tables(self._model_tables, model_tables), leases=self.leases,
                    access=self.access)

    def spec(self, name: str) -> TableSpec:
        """The table's spec, or a KeyError that lists the tables this lake knows."""
        return table_spec(name, self.tables)

    def path(self, name: str) -> Path | str:
        """The table's folder, or its URI on object storage."""
        spec = self.spec(name)
        if self.remote:
            return f"{self.root}/{spec.layer}/{spec.name}"
        return self.root / spec.layer / spec.name

    def exists(self, name: str) -> bool:
        return name in self._open or self._is_table(name)

    def is_present(self) -> bool:
        """Whether anything is at the root: the folder exists, or objects are under the prefix."""
        if not self.remote:
            return self.root.is_dir()
        import pyarrow.fs as pafs

        self._check()
        selector = pafs.FileSelector(str(self.root).removeprefix("s3://"), allow_not_found=True)
        return bool(self.object_store().get_file_info(selector))

    def object_store(self) -> pafs.FileSystem:
        """pyarrow's filesystem of a lake on object storage (paths `bucket/key`), made once."""
        if self._filesystem is None:
            self._filesystem = self.access.arrow_filesystem()
        return self._filesystem

    def _check(self) -> None:
        """On object storage, fail at once with the endpoint's address if it does not answer."""
        if not self._checked:
            check_reachable(str(self.root), self.access)
            self._checked = True

    def _is_table(self, name: str) -> bool:
        self._check()
        return DeltaTable.is_deltatable(str(self.path(name)), storage_options=self._options)

    def _delta(self, name: str, version: int | None = None) -> DeltaTable:
        return DeltaTable(str(self.path(name)), version=version, storage_options=self._options)

    def table(self, name: str) -> DeltaTable:
        """The Delta table at its latest version. The same object each time: do not hold on to it
        across writes.

        Raises:
            MissingTable: no write has created the table yet (reading never creates one).
        """
        table = self._opened(name)
        if table is None:
            raise MissingTable(f"table {name} does not exist yet in {self.root}")
        return table

    def require(self, names: Iterable[str], to_create: str) -> None:
        """Raise MissingTable, saying what to run (`to_create`), unless every table exists: for
        readers to whom an empty table would be a false all-clear."""
        missing = [name for name in names if not self.exists(name)]
        if missing:
            raise MissingTable(f"{', '.join(missing)} {'does' if len(missing) == 1 else 'do'} not exist yet "
                               f"in {self.root}: {to_create}")

    def _opened(self, name: str) -> DeltaTable | None:
        """The table, opened once and caught up since; None while no write has created it."""
        with self._open_lock:
            table = self._open.get(name)
            if table is not None:
                table.update_incremental()  # the commits made since, by this process or another
            elif self._is_table(name):
                table = self._open[name] = self._delta(name)
            return table

    def _writable(self, name: str) -> DeltaTable:
        """The table to write to, created empty with its registered schema first if need be."""
        table = self._opened(name)
        if table is not None:
            # a table written by an older version
            _add_new_nullable_columns(table, self.spec(name))
            _set_missing_properties(table, self._properties(name))
            return table
        spec = self.spec(name)
        path = self.path(name)
        with self._open_lock:
            if name not in self._open:
                if not self._is_table(name):  # another writer may have created it since
                    if not self.remote:
                        path.parent.mkdir(parents=True, exist_ok=True)
                    DeltaTable.create(str(path), schema=spec.schema, partition_by=list(spec.partition_by) or None,
                                      name=spec.name, description=spec.description,
                                      configuration=self._properties(name), storage_options=self._options)
                self._open[name] = self._delta(name)
            return self._open[name]

    def _properties(self, name: str) -> dict[str, str]:
        """The Delta properties the table is created with. A model table has no change data feed:
        no model reads another's appended rows, and a MERGE would write its changes twice."""
        if name in self._model_tables:
            return {key: value for key, value in TABLE_PROPERTIES.items() if key != CHANGE_DATA_FEED}
        return dict(TABLE_PROPERTIES)

    def append(self, name: str, data: pa.Table) -> int:
        """Append rows in one Delta commit (all or nothing). Returns the new table version."""
        spec = self.spec(name)
        table = self._writable(name)
        write_deltalake(table, conform(data, spec), mode="append")
        table.update_incremental()
        return table.version()

    def overwrite(self, name: str, data: pa.Table) -> int:
        """Replace the table's rows in one Delta commit. Returns the new table version."""
        spec = self.spec(name)
        table = self._writable(name)
        rows = conform(data, spec)
        # A model's columns can change between versions (one renamed or dropped). Replacing every
        # row, the commit replaces the schema with the registered one too.
        replaced = table.schema().to_arrow().names != rows.schema.names
        write_deltalake(table, rows, mode="overwrite", schema_mode="overwrite" if replaced else None)
        table.update_incremental()
        return table.version()

    def merge(self, name: str, data: pa.Table, delete_when: str = "") -> dict:
        """Upsert rows by the table's registered keys; with `delete_when`, a boolean column of
        `data`, its true rows delete the table's row with their key instead (and insert nothing).
        Returns delta-rs's merge metrics."""
        spec = self.spec(name)
        predicate = " and ".join(f"target.{key} = source.{key}" for key in spec.keys)
        if not delete_when:
            return (self._writable(name)
                    .merge(conform(data, spec), predicate=predicate, source_alias="source", target_alias="target")
                    .when_matched_update_all()
                    .when_not_matched_insert_all()
                    .execute())
        source = conform(data, spec).append_column(delete_when, data.column(delete_when))
        values = {column: f"source.{column}" for column in spec.schema.names}
        return (self._writable(name)
                .merge(source, predicate=predicate, source_alias="source", target_alias="target")
                .when_matched_delete(predicate=f"source.{delete_when}")
                .when_matched_update(values)
                .when_not_matched_insert(values, predicate=f"not source.{delete_when}")
                .execute())

    def compact(self, name: str) -> int:
        """Rewrite the table's small files into few large ones, in one Delta commit (the rows and
        the older versions stay as they were). Returns the number of files it replaced."""
        return self.table(name).optimize.compact()["numFilesRemoved"]

    # Reads: a table no write has created yet reads as empty, with its registered schema.

    def read_arrow(self, name: str, columns: list[str] | None = None, version: int | None = None) -> pa.Table:
        """The table's rows (at `version`, default the latest) as Arrow (small tables and tests;
        Spark for the rest)."""
        def read(table: DeltaTable | None) -> pa.Table:
            if table is None:
                empty = self.spec(name).schema.empty_table()
                return empty if columns is None else empty.select(columns)
            # Passing a filesystem avoids an abort at interpreter exit seen with delta-rs's own.
            if self.remote:
                filesystem = pafs.SubTreeFileSystem(str(self.path(name)).removeprefix("s3://"),
                                                    self.object_store())
            else:
                filesystem = pafs.SubTreeFileSystem(str(self.path(name)), pafs.LocalFileSystem())
            return table.to_pyarrow_table(columns=columns, filesystem=filesystem)

        return read(self._opened(name)) if version is None else self._at_version(name, version, read)

    def query(self, sql: str, *names: str) -> pa.Table:
        """Run SQL with delta-rs's engine over the named tables (registered under their names).

        Raises:
            OutdatedTable: the query failed, and a table it reads lacks columns its registered
                schema has (written by an older version, and not rewritten since).
        """
        builder = QueryBuilder()
        opened = {name: self._opened(name) for name in names}
        for name, table in opened.items():
            builder = builder.register(name, table or _empty_stand_in(self.spec(name)))
        try:
            return pa.table(builder.execute(sql).read_all())
        except Exception:
            for name, table in opened.items():
                if table is not None:
                    missing = [f.name for f in self.spec(name).schema
                               if f.name not in table.schema().to_arrow().names]
                    if missing:
                        raise OutdatedTable(name, missing) from None
            raise

    def count(self, name: str) -> int:
        return self.query(f"select count(*) as n from {name}", name).column("n")[0].as_py()

    def version(self, name: str) -> int:
        """The latest version; -1 (Delta's version before the first commit) for a table no write
        has created yet."""
        table = self._opened(name)
        return -1 if table is None else table.version()

    def files(self, name: str, version: int | None = None) -> list[str]:
        """The table's active data files (at `version`, default the latest)."""
        def uris(table: DeltaTable | None) -> list[str]:
            return [] if table is None else table.file_uris()

        return uris(self._opened(name)) if version is None else self._at_version(name, version, uris)

    def data_bytes(self, name: str, version: int, files: Iterable[str] | None = None) -> int:
        """The size of the table's data files at `version` (only of `files`, URIs as `files`
        lists them, when given): what reading them costs, before any is read."""
        def size(table: DeltaTable | None) -> int:
            if table is None:
                return 0
            actions = pa.table(table.get_add_actions(flatten=True)).select(["path", "size_bytes"]).to_pylist()
            # a data file's name is unique in its table (Delta's writers put a UUID in it)
            sizes = {row["path"].rsplit("/", 1)[-1]: row["size_bytes"] for row in actions}
            return sum(sizes.values()) if files is None else sum(sizes[uri.rsplit("/", 1)[-1]] for uri in files)

        return self._at_version(name, version, size)

    def _at_version(self, name: str, version: int, use: Callable[[DeltaTable | None], T]) -> T:
        """`use` applied to the table at `version` (None before its first version): to the open
        table when it is at that version, under the lock that keeps it there, else to the table
        opened at that version."""
        if version < 0:  # before the table was created
            return use(None)
        with self._open_lock:  # no catching up between comparing the version and using it
            latest = self._open.get(name)
            if latest is not None and latest.version() == version:
                return use(latest)
        return use(self._delta(name, version))

    # Spark: the models read and write the tables through Delta's own Spark reader and writer
    # (delta-spark, which every session carries: offsets_platform.lake.spark). Reads are pinned to
    # a version, so the models of one refresh see one state of each table whatever is written
    # meanwhile. A table is still created by delta-rs, with its registered schema and properties,
    # so that its NOT NULL columns stay NOT NULL (a Spark write would create them nullable).

    def spark_read(self, spark: "SparkSession", name: str, version: int | None = None,
                   via_arrow: bool = False) -> "DataFrame":
        """The table at `version` (default: its latest) through Delta's Spark reader, or `via_arrow`
        as rows read with delta-rs and handed to Spark (for a small table: no Spark job rebuilds
        the version's state), with the columns of its registered schema: a column the table lacks
        (written by an older version, not rewritten since) reads as null. A table no write has
        created yet, and any version before its first, read empty."""
        version = self.version(name) if version is None else version
        if version < 0:
            return _empty_frame(spark, self.spec(name))
        if via_arrow:
            return _arrow_frame(spark, self.read_arrow(name, version=version), self.spec(name))
        frame = self._spark_reader(spark).option("versionAsOf", version).load(str(self.path(name)))
        return self._with_registered_columns(frame, name, version)

    def spark_read_appended(self, spark: "SparkSession", name: str, after_version: int,
                            up_to_version: int, via_arrow: bool = False,
                            files: list[str] | None = None) -> "DataFrame":
        """The rows appended to the table after `after_version`, up to `up_to_version`: the data
        files those versions added (`files`, as `appended_files` gave them; found when not given)
        read as Parquet by Spark or, `via_arrow`, the change data feed read by delta-rs.

        Only for versions that merely appended (`appended_files` says so): the feed would show
        a rewrite's rows as deleted and inserted again, and a rewritten file holds old rows. A file
        an append added is a whole Parquet file of new rows, with no partition values or deletion
        vector of its own (the lake's tables have neither); Delta's own reader of the feed read the
        same files at more than twice the cost (benchmarks/README.md). A table whose readers need
        more than Parquet (column mapping, deletion vectors, written elsewhere) is read through
        Delta's feed."""
        if up_to_version <= after_version:
            return _empty_frame(spark, self.spec(name))
        if via_arrow:
            changes = pa.table(self._at_version(name, up_to_version, lambda table: table.load_cdf(
                starting_version=after_version + 1, ending_version=up_to_version)))
            # delta-rs gives strings as Arrow string views, which pyarrow's filters do not take yet:
            # the rows are cast to the registered (plain) types before they are filtered
            inserted = pc.equal(changes.column("_change_type").cast(pa.string()), "insert")
            return _arrow_frame(spark, _registered(changes, self.spec(name)).filter(inserted), self.spec(name))
        files = self.appended_files(name, after_version, up_to_version) if files is None else files
        if files is not None and self._plain_parquet(name, up_to_version):
            return self._spark_read_files(spark, name, files)
        changes = (self._spark_reader(spark).option("readChangeFeed", "true")
                   .option("startingVersion", after_version + 1).option("endingVersion", up_to_version)
                   .load(str(self.path(name))))
        return self._with_registered_columns(changes.where("_change_type = 'insert'"), name, up_to_version)

    def _plain_parquet(self, name: str, version: int) -> bool:
        """Whether the table's data files at `version` read right as plain Parquet, all in its
        folder: it is not partitioned, and its protocol asks readers for nothing more (reader
        version 1: no column mapping, no deletion vectors)."""
        return not self.spec(name).partition_by and self._at_version(
            name, version, lambda table: table is not None and table.protocol().min_reader_version == 1)

    def _spark_read_files(self, spark: "SparkSession", name: str, files: list[str]) -> "DataFrame":
        """The rows of some of the table's data files (URIs as `files` lists them), with the
        registered columns: a column a file lacks reads as null, as Delta reads it."""
        from pyspark.sql.pandas.types import from_arrow_schema

        if not files:
            return _empty_frame(spark, self.spec(name))
        # each file's path for Spark: the table's folder as Delta's Spark reader is given it, and the
        # file's name (the folder holds them all: _plain_parquet)
        paths = [f"{self.path(name)}/{uri.rsplit('/', 1)[-1]}" for uri in files]
        schema = from_arrow_schema(self.spec(name).schema)
        return self._spark_reader(spark, "parquet").schema(schema).load(paths)

    def appended_files(self, name: str, after_version: int, up_to_version: int) -> list[str] | None:
        """The data files added after `after_version` up to `up_to_version`, when those versions
        only appended or pruned (`spark_delete_pruned`) and recorded their rows in the change
        data feed; None otherwise, or when `after_version` can no longer be loaded: then only
        reading the whole table is correct. A prune removes only rows every reader had read
        before it, so the rows appended since a version are still the feed's inserts."""
        try:
            before = self._delta(name, after_version) if after_version >= 0 else None
        except Exception:  # delta-rs raises various errors for versions whose log was cleaned up
            return None
        if before is not None and before.metadata().configuration.get(CHANGE_DATA_FEED) != "true":
            return None
        files_before = set(before.file_uris()) if before is not None else set()
        files_now = self.files(name, up_to_version)
        if files_before <= set(files_now):
            return [uri for uri in files_now if uri not in files_before]
        return self._appended_around_prunes(name, after_version, up_to_version, files_before)

    def _appended_around_prunes(self, name: str, after_version: int, up_to_version: int,
                                files_before: set[str]) -> list[str] | None:
        """`appended_files` over versions that removed files: the files the appends among them
        added, when every version that removed any was a prune; else None."""
        pruned = {commit["version"] for commit in self.table(name).history(self.version(name) - after_version)
                  if commit.get("userMetadata") == PRUNE_COMMIT}
        appended: list[str] = []
        previous = files_before
        for version in range(after_version + 1, up_to_version + 1):
            files = set(self.files(name, version))
            if version not in pruned:
                if not previous <= files:
                    return None
                appended += sorted(files - previous)
            previous = files
        return [uri for uri in appended if uri in previous]  # as `files` lists them at up_to_version

    def spark_overwrite(self, name: str, frame: "DataFrame", via_arrow: bool = False,
                        arrow_max_rows: int = -1) -> int:
        """Replace the table's rows with `frame`'s (its columns cast to the registered schema) in
        one Delta commit by Delta's Spark writer, or, `via_arrow`, by delta-rs from the rows
        collected as Arrow (for a small result). With `arrow_max_rows` at 0 or more, a result of
        at most that many rows is written by delta-rs too: it is computed once, counted, and
        collected only when small. Returns the rows written."""
        spec = self.spec(name)
        if via_arrow:
            rows = _collected(frame, spec)
            self.overwrite(name, rows)
            return rows.num_rows
        if arrow_max_rows < 0:
            return self._spark_overwrite_rows(name, _conformed(frame, spec))
        with _computed_once(_conformed(frame, spec)) as result:
            if result.count() <= arrow_max_rows:
                rows = conform(to_arrow(result), spec)
                self.overwrite(name, rows)
                return rows.num_rows
            return self._spark_overwrite_rows(name, result)

    def _spark_overwrite_rows(self, name: str, rows: "DataFrame") -> int:
        spec = self.spec(name)
        table = self._writable(name)
        if table.schema().to_arrow().names != spec.schema.names:
            # A model's columns can change between versions (one renamed or dropped). The empty
            # table with the registered schema comes first, from delta-rs, which keeps NOT NULL
            # columns NOT NULL (Spark's overwriteSchema makes every column nullable).
            write_deltalake(table, spec.schema.empty_table(), mode="overwrite", schema_mode="overwrite")
        before = table.version()
        rows.write.format("delta").mode("overwrite").save(str(self.path(name)))
        return self._rows_written(name, before, "numOutputRows")

    def spark_merge(self, name: str, frame: "DataFrame", via_arrow: bool = False, delete_when: str = "",
                    arrow_max_rows: int = -1, rewrite: bool = False) -> int:
        """Upsert `frame`'s rows (cast to the registered schema) by the table's registered keys
        with Delta's MERGE INTO, or, `rewrite`, by writing the table anew from its rows whose keys
        `frame` lacks and `frame`'s rows (one read of the table instead of MERGE's two, for a result
        whose keys are spread over most of its files); or, `via_arrow`, with delta-rs's merge of
        the rows collected as Arrow (for a small result); `delete_when` as in `merge`;
        `arrow_max_rows` as in `spark_overwrite`, for a table of at most MERGE_VIA_ARROW_MAX_BYTES.
        Returns the rows merged."""
        spec = self.spec(name)
        flag = (delete_when,) if delete_when else ()
        # A merge of no rows commits nothing: a new version would make every model that reads the
        # table run again for nothing.
        if via_arrow:
            rows = to_arrow(_conformed(frame, spec, keep=flag))
            if rows.num_rows:
                self.merge(name, rows, delete_when)
            return rows.num_rows
        with _computed_once(_conformed(frame, spec, keep=flag)) as result:
            count = result.count()
            if count == 0:
                return 0
            if count <= arrow_max_rows and self.data_bytes(name, self.version(name)) <= MERGE_VIA_ARROW_MAX_BYTES:
                self.merge(name, to_arrow(result), delete_when)
                return count
            if rewrite:
                self._spark_rewrite_rows(name, result, delete_when)
                return count
            return self._spark_merge_rows(name, result, delete_when)

    def _spark_rewrite_rows(self, name: str, rows: "DataFrame", delete_when: str) -> None:
        """What MERGE INTO with `rows` gives, written as a new version of the whole table: the
        latest version's rows whose keys `rows` lacks, and `rows` but those flagged to delete. Delta
        reads the version being replaced from its own files, which the overwrite only marks removed."""
        spec = self.spec(name)
        spark = rows.sparkSession
        kept = self.spark_read(spark, name).join(rows.select(*spec.keys), on=list(spec.keys), how="left_anti")
        new = rows.where(f"not {delete_when}").drop(delete_when) if delete_when else rows
        self._spark_overwrite_rows(name, _conformed(kept.unionByName(new), spec))

    def _spark_merge_rows(self, name: str, rows: "DataFrame", delete_when: str) -> int:
        spec = self.spec(name)
        before = self._writable(name).version()
        spark = rows.sparkSession
        source = f"{name}__merge_source"
        rows.createOrReplaceTempView(source)
        on = " and ".join(f"target.{key} = source.{key}" for key in spec.keys)
        if delete_when:
            columns = spec.schema.names
            clauses = (f"when matched and source.{delete_when} then delete "
                       f"when matched then update set {', '.join(f'target.{c} = source.{c}' for c in columns)} "
                       f"when not matched and not source.{delete_when} then insert ({', '.join(columns)}) "
                       f"values ({', '.join(f'source.{c}' for c in columns)})")
        else:
            clauses = "when matched then update set * when not matched then insert *"
        spark.sql(f"merge into delta.{spark_identifier(str(self.path(name)))} as target using {source} as source "
                  f"on {on} {clauses}")
        spark.catalog.dropTempView(source)
        return self._rows_written(name, before, "numSourceRows")

    def spark_delete_pruned(self, name: str, keys: "DataFrame") -> int:
        """Delete the table's rows whose registered keys are among `keys`' rows, in one Delta
        commit marked as a prune (PRUNE_COMMIT in its userMetadata), which `appended_files`
        tells from a rewrite. Only for rows every reader of the table has read. Returns the
        rows deleted."""
        spec = self.spec(name)
        before = self._writable(name).version()
        spark = keys.sparkSession
        source = f"{name}__pruned_keys"
        keys.select(*spec.keys).createOrReplaceTempView(source)
        # null-safe: a key column may be null (snapshot_errors' name, for a call about no group or topic)
        on = " and ".join(f"target.{key} <=> source.{key}" for key in spec.keys)
        spark.conf.set(_USER_METADATA, PRUNE_COMMIT)
        try:
            spark.sql(f"merge into delta.{spark_identifier(str(self.path(name)))} as target using {source} as source "
                      f"on {on} when matched then delete")
        finally:
            spark.conf.unset(_USER_METADATA)
            spark.catalog.dropTempView(source)
        return self._rows_written(name, before, "numTargetRowsDeleted")

    def vacuum(self, name: str) -> int:
        """Remove the table's data files that no version within its retention
        (delta.deletedFileRetentionDuration, Delta's default a week) uses any more, so that
        readers pinned to a recent version keep their files. Returns the files removed."""
        if not self.exists(name):
            return 0
        return len(self.table(name).vacuum(dry_run=False))

    def _spark_reader(self, spark: "SparkSession", data_format: str = "delta"):
        if self.remote and id(spark) not in self._spark_configured:
            # s3a's endpoint and the like, once per session (a setting read over Spark Connect is a
            # request); the credentials come from the JVM's environment
            self.access.configure_spark(spark)
            self._spark_configured.add(id(spark))
        return spark.read.format(data_format)

    def _with_registered_columns(self, frame: "DataFrame", name: str, version: int) -> "DataFrame":
        """`frame` with exactly the registered columns, in their order; those the table lacked at
        `version` as typed nulls. The table's columns come from delta-rs's log: asking Spark for a
        DataFrame's columns is one more analysis (a round trip on Spark Connect)."""
        from pyspark.sql import functions as F
        from pyspark.sql.pandas.types import from_arrow_schema

        spec = self.spec(name)
        present = set(self._columns_at(name, version))
        return frame.select(*[F.col(f.name) if f.name in present else F.lit(None).cast(f.dataType).alias(f.name)
                              for f in from_arrow_schema(spec.schema)])

    def _columns_at(self, name: str, version: int) -> list[str]:
        table = self._opened(name)
        if table is not None and table.version() == version:
            return table.schema().to_arrow().names
        return self._delta(name, version).schema().to_arrow().names

    def _rows_written(self, name: str, before: int, metric: str) -> int:
        """A row count Delta's Spark writer recorded in the commit it just made (its operation
        metrics in the table's history, read with delta-rs: no Spark job counts the rows again).
        No commit since `before`: Delta had nothing to write (no rows into an empty table)."""
        table = self._opened(name)
        if table.version() == before:
            return 0
        return int(table.history(1)[0]["operationMetrics"][metric])


def _empty_frame(spark: "SparkSession", spec: TableSpec) -> "DataFrame":
    from pyspark.sql.pandas.types import from_arrow_schema

    return spark.createDataFrame([], from_arrow_schema(spec.schema))


def _arrow_frame(spark: "SparkSession", rows: pa.Table, spec: TableSpec) -> "DataFrame":
    """Arrow rows as a Spark DataFrame with the spec's columns (`_registered`)."""
    if rows.num_rows == 0:  # pyspark fails to localise the timestamps of an Arrow table without chunks
        return _empty_frame(spark, spec)
    return spark.createDataFrame(_registered(rows, spec))


def _registered(rows: pa.Table, spec: TableSpec) -> pa.Table:
    """`rows` with exactly the spec's columns, in its order and cast to its types: those `rows`
    lack as nulls (as `_with_registered_columns` gives them on Delta's path), so every column is
    nullable here. NOT NULL is the writers' to enforce."""
    for field in spec.schema:
        if field.name not in rows.column_names:
            rows = rows.append_column(field.name, pa.nulls(rows.num_rows, field.type))
    nullable = pa.schema([field.with_nullable(True) for field in spec.schema])
    return rows.select(spec.schema.names).cast(nullable)


@contextmanager
def _computed_once(frame: "DataFrame") -> Iterator["DataFrame"]:
    """`frame` persisted: its first action computes it, the next ones read Spark's cache."""
    frame = frame.persist()
    try:
        yield frame
    finally:
        frame.unpersist()


def _collected(frame: "DataFrame", spec: TableSpec) -> pa.Table:
    """A small result's rows as Arrow, cast to the spec's columns (`conform`: a null in a NOT NULL
    column is a ValueError naming it, before anything is written)."""
    return conform(to_arrow(_conformed(frame, spec)), spec)


def _conformed(frame: "DataFrame", spec: TableSpec, keep: tuple[str, ...] = ()) -> "DataFrame":
    """`frame`'s columns in the spec's order, cast to its types (what `conform` does for Arrow),
    then the columns named in `keep` as they are."""
    from pyspark.sql import functions as F
    from pyspark.sql.pandas.types import from_arrow_schema

    return frame.select(*[F.col(f.name).cast(f.dataType).alias(f.name) for f in from_arrow_schema(spec.schema)],
                        *keep)


class NoLake(RuntimeError):
    """A reader was pointed at a folder without a lake (or without the tables it reads)."""


class MissingTable(LookupError):
    """A table that must exist for an answer to mean anything has not been written yet."""


class OutdatedTable(LookupError):
    """A table was written by an older version of the project and lacks columns a reader needs."""

    def __init__(self, name: str, missing: list[str]):
        self.name, self.missing = name, missing
        where = "rerun the models (`offsets-platform models`, or the Dagster job refresh)"
        super().__init__(f"the table {name} lacks the columns {', '.join(missing)}: it was written by an older "
                         f"version of the project; {where} to rewrite it")


# delta-rs's SQL engine reads only Delta tables, so a query naming a table no write has created
# yet reads an empty one with the registered schema, made once per process in a temporary folder
# (outside the lake, which reading must not change) and never written to.
_STAND_INS: dict[tuple[str, str], DeltaTable] = {}
_STAND_INS_LOCK = threading.Lock()
_STAND_INS_FOLDER: tempfile.TemporaryDirectory | None = None


def _empty_stand_in(spec: TableSpec) -> DeltaTable:
    global _STAND_INS_FOLDER
    key = (spec.name, str(spec.schema))
    with _STAND_INS_LOCK:
        if key not in _STAND_INS:
            if _STAND_INS_FOLDER is None:
                _STAND_INS_FOLDER = tempfile.TemporaryDirectory(prefix="offsets-platform-empty-")
            path = Path(_STAND_INS_FOLDER.name) / str(len(_STAND_INS))
            _STAND_INS[key] = DeltaTable.create(str(path), schema=spec.schema, name=spec.name)
        return _STAND_INS[key]


def _add_new_nullable_columns(table: DeltaTable, spec: TableSpec) -> None:
    """Give a table written before its spec gained nullable columns those columns, in one Delta
    commit that touches no data file: its existing rows read them as null. Only that change is
    made here; any other difference from the spec still fails the next write."""
    present = {field.name for field in table.schema().fields}
    missing = [field for field in spec.schema if field.name not in present and field.nullable]
    if not missing:
        return
    try:
        table.alter.add_columns([Field.from_arrow(field) for field in missing])
    except Exception:
        # another process may have added them first; anything else is raised below
        table.update_incremental()
        present = {field.name for field in table.schema().fields}
        if any(field.name not in present for field in missing):
            raise
    table.update_incremental()


def _set_missing_properties(table: DeltaTable, properties: Mapping[str, str]) -> None:
    """Give a table created before a property was among those tables are created with that
    property, in one Delta commit that touches no data file (the change data feed then records
    the appends from there on)."""
    missing = {key: value for key, value in properties.items() if key not in table.metadata().configuration}
    if not missing:
        return
    try:
        table.alter.set_table_properties(missing)
    except Exception:
        # another process may have set them first; anything else is raised below
        table.update_incremental()
        if any(key not in table.metadata().configuration for key in missing):
            raise
    table.update_incremental()


def conform(data: pa.Table, spec: TableSpec) -> pa.Table:
    """Order and cast `data`'s columns to the spec's schema; a missing column is an error."""
    missing = [f.name for f in spec.schema if f.name not in data.column_names]
    if missing:
        raise ValueError(f"table {spec.name}: data lacks columns {missing}")
    return data.select(spec.schema.names).cast(spec.schema)
