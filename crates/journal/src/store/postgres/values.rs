//! Column values between the journal and PostgreSQL: the values a row is written with are
//! SQLite's five kinds (`rusqlite::types::Value`, what the chain hashes), bound here to
//! whatever type the PostgreSQL column has, and read back into the same five, so a row's
//! canonical content, and the chain made on it, are the same in both journals.

use bytes::BytesMut;
use postgres::Row;
use postgres::types::{IsNull, ToSql, Type, to_sql_checked};
use rusqlite::types::Value;

/// A value bound to a column of any of the journal's types.
#[derive(Debug)]
pub(super) struct Bind<'a>(pub &'a Value);

impl ToSql for Bind<'_> {
    fn to_sql(
        &self,
        ty: &Type,
        out: &mut BytesMut,
    ) -> Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        match self.0 {
            Value::Null => Ok(IsNull::Yes),
            Value::Integer(i) => match *ty {
                Type::INT2 => i16::try_from(*i)?.to_sql(ty, out),
                Type::INT4 => i32::try_from(*i)?.to_sql(ty, out),
                Type::BOOL => (*i != 0).to_sql(ty, out),
                Type::FLOAT8 => (*i as f64).to_sql(ty, out),
                _ => i.to_sql(ty, out),
            },
            Value::Real(f) => f.to_sql(ty, out),
            Value::Text(text) => text.as_str().to_sql(ty, out),
            Value::Blob(bytes) => bytes.as_slice().to_sql(ty, out),
        }
    }

    fn accepts(ty: &Type) -> bool {
        matches!(
            *ty,
            Type::INT2
                | Type::INT4
                | Type::INT8
                | Type::BOOL
                | Type::FLOAT8
                | Type::TEXT
                | Type::VARCHAR
                | Type::BYTEA
        )
    }

    to_sql_checked!();
}

/// Column `index` of `row` as the value SQLite would hold (a boolean as 0 or 1).
pub(super) fn value_at(row: &Row, index: usize) -> Result<Value, postgres::Error> {
    let column = &row.columns()[index];
    Ok(match *column.type_() {
        Type::INT2 => row
            .try_get::<_, Option<i16>>(index)?
            .map_or(Value::Null, |i| Value::Integer(i.into())),
        Type::INT4 => row
            .try_get::<_, Option<i32>>(index)?
            .map_or(Value::Null, |i| Value::Integer(i.into())),
        Type::INT8 => row
            .try_get::<_, Option<i64>>(index)?
            .map_or(Value::Null, Value::Integer),
        Type::BOOL => row
            .try_get::<_, Option<bool>>(index)?
            .map_or(Value::Null, |b| Value::Integer(b.into())),
        Type::FLOAT8 => row
            .try_get::<_, Option<f64>>(index)?
            .map_or(Value::Null, Value::Real),
        Type::BYTEA => row
            .try_get::<_, Option<Vec<u8>>>(index)?
            .map_or(Value::Null, Value::Blob),
        _ => row
            .try_get::<_, Option<String>>(index)?
            .map_or(Value::Null, Value::Text),
    })
}

/// Every bound value as the client takes them.
pub(super) fn bound<'a>(values: &'a [Bind<'a>]) -> Vec<&'a (dyn ToSql + Sync)> {
    values.iter().map(|v| v as &(dyn ToSql + Sync)).collect()
}

/// SQL written with SQLite's numbered parameters (`?1`) in PostgreSQL's (`$1`).
pub(super) fn dialect(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len());
    let mut chars = sql.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '?' && chars.peek().is_some_and(char::is_ascii_digit) {
            out.push('$');
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn numbered_parameters_are_renamed_and_nothing_else_is() {
        assert_eq!(
            super::dialect("SELECT a FROM t WHERE b = ?1 AND c = ?12 AND d = '?'"),
            "SELECT a FROM t WHERE b = $1 AND c = $12 AND d = '?'"
        );
    }
}
