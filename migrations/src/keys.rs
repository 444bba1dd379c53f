//! Named foreign keys and indexes, written the same way by every migration.

use sea_orm_migration::prelude::*;

/// A named foreign key `from_table.from_col -> to_table.id`.
pub(crate) fn fk<FT, FC, TT, TC>(
    name: &str,
    from: (FT, FC),
    to: (TT, TC),
    on_delete: ForeignKeyAction,
) -> ForeignKeyCreateStatement
where
    FT: IntoTableRef,
    FC: IntoIden,
    TT: IntoTableRef,
    TC: IntoIden,
{
    ForeignKey::create()
        .name(name)
        .from(from.0, from.1)
        .to(to.0, to.1)
        .on_delete(on_delete)
        .take()
}

/// A named (optionally unique) index over `cols` of `table`.
pub(crate) fn index<T, C, I>(name: &str, table: T, cols: I, unique: bool) -> IndexCreateStatement
where
    T: IntoTableRef,
    C: IntoIndexColumn,
    I: IntoIterator<Item = C>,
{
    let mut stmt = Index::create();
    stmt.name(name).table(table);
    for col in cols {
        stmt.col(col);
    }
    if unique {
        stmt.unique();
    }
    stmt.take()
}

/// A text primary key (the application-generated ids).
pub(crate) fn pk_string<T: IntoIden>(col: T) -> ColumnDef {
    ColumnDef::new(col).string().not_null().primary_key().take()
}
