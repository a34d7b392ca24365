"""Stand-ins for the functions the runner gives model templates, so that sqlfluff can render
them for linting: names instead of views and subqueries, and a plain value per variable."""


def ref(name, at_last_run=False, new_only=False):
    return name


def source(layer, table, new_only=False):
    return table


def var(name, default=None):
    return "0" if default is None else default


def is_incremental():
    return False


def lake_timestamp(column):
    return f"timestamp_millis({column})"


def _sql_string(value):
    return "'" + str(value).replace("\\", "\\\\").replace("'", "\\'") + "'"


SQLFLUFF_JINJA_FILTERS = {"sql_string": _sql_string}
