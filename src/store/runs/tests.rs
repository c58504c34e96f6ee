//! The start rows against their SQL: a row must bind exactly the placeholders its one-row
//! statement names, or the multi-row form of a group start is numbered wrong on PostgreSQL.

use uuid::Uuid;

use super::{run_row, INSERT_RUN_SQL};
use crate::domain::{MessageKind, MessageRole, Mode};
use crate::store::conversations::{
    conversation_row, message_row, INSERT_CONVERSATION_SQL, INSERT_MESSAGE_SQL,
};
use crate::store::{LeaseHolder, NewConversation, NewMessage, NewRun, Store};

/// The highest `$n` of `sql`.
fn placeholders(sql: &str) -> usize {
    sql.split('$')
        .skip(1)
        .filter_map(|s| {
            let digits: String = s.chars().take_while(char::is_ascii_digit).collect();
            digits.parse().ok()
        })
        .max()
        .unwrap_or(0)
}

#[test]
fn start_rows_bind_what_their_sql_names() {
    let conv = Store::draft_conversation("o", NewConversation::default());
    let run = NewRun {
        id: Uuid::new_v4(),
        conversation_id: conv.id,
        owner: "o".into(),
        mode: Mode::Native,
        model: "m".into(),
        traceparent: Some("00-x-y-01".into()),
    };
    let holder = LeaseHolder {
        instance: "a".into(),
        ttl: std::time::Duration::from_secs(5),
    };
    let query = NewMessage {
        id: None,
        conversation_id: conv.id,
        role: MessageRole::User,
        kind: MessageKind::Query,
        content: "q".into(),
        run_id: Some(run.id),
        images: Vec::new(),
    };
    assert_eq!(
        conversation_row(&conv, 1).len(),
        placeholders(INSERT_CONVERSATION_SQL)
    );
    assert_eq!(
        run_row(&run, 1, Some(&holder)).len(),
        placeholders(INSERT_RUN_SQL)
    );
    assert_eq!(
        message_row("id".into(), &query, 1).len(),
        placeholders(INSERT_MESSAGE_SQL)
    );
}

/// Two run rows as one PostgreSQL statement (as `insert_many!` numbers them, by the rows'
/// width) bind every value once.
#[test]
fn two_runs_in_one_statement_bind_every_value() {
    let run = |id| NewRun {
        id,
        conversation_id: Uuid::new_v4(),
        owner: "o".into(),
        mode: Mode::Native,
        model: "m".into(),
        traceparent: None,
    };
    let (a, b) = (run(Uuid::new_v4()), run(Uuid::new_v4()));
    let rows = [run_row(&a, 1, None), run_row(&b, 1, None)];
    let sql = crate::store::binds::many_rows(INSERT_RUN_SQL, rows[0].len(), rows.len(), true);
    assert_eq!(placeholders(&sql), rows.iter().map(Vec::len).sum::<usize>());
}
