"""The history's Alembic migrations, shipped inside the package so that an installed wheel can
create and upgrade a database (``script_location = proofdiff.history:migrations``). Run only
through :func:`proofdiff.history.database.open_history`."""
