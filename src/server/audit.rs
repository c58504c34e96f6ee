//! [`StoreAudit`]: the `audit` hook's sink over [`Store::insert_audit`], so the tool-call trail
//! lands in the database. A failed write is logged and dropped: auditing never fails a call.

use async_trait::async_trait;
use uuid::Uuid;

use crate::agent::hooks::builtin::{AuditOutcome, AuditRecord, AuditSink};
use crate::store::{AuditRow, Store};

/// Writes audit records through the store.
#[derive(Clone, Debug)]
pub struct StoreAudit(pub Store);

/// The stored spelling of an outcome (matches its serde form).
fn outcome(o: AuditOutcome) -> &'static str {
    match o {
        AuditOutcome::Ok => "ok",
        AuditOutcome::Error => "error",
        AuditOutcome::Blocked => "blocked",
    }
}

/// The database row for a hook record; `None` when its ids are not UUIDs (never for runs
/// started by the run manager).
pub fn audit_row(r: AuditRecord) -> Option<AuditRow> {
    Some(AuditRow {
        run_id: Uuid::parse_str(&r.run_id).ok()?,
        conversation_id: Uuid::parse_str(&r.conversation_id).ok()?,
        call_id: r.call_id,
        tool: r.tool,
        arguments: r.arguments,
        result_size: i64::try_from(r.result_size).unwrap_or(i64::MAX),
        duration_ms: i64::try_from(r.duration_ms).unwrap_or(i64::MAX),
        outcome: outcome(r.outcome).to_string(),
        at: r.at,
    })
}

#[async_trait]
impl AuditSink for StoreAudit {
    async fn record(&self, record: AuditRecord) {
        let run_id = record.run_id.clone();
        let Some(row) = audit_row(record) else {
            tracing::warn!(%run_id, "audit record with a malformed id dropped");
            return;
        };
        if let Err(e) = self.0.insert_audit(row).await {
            tracing::error!(%run_id, error = %e, "could not store an audit record");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_convert_and_bad_ids_are_dropped() {
        let id = Uuid::new_v4();
        let record = AuditRecord {
            run_id: id.to_string(),
            conversation_id: id.to_string(),
            call_id: "c1".into(),
            tool: "calculator".into(),
            arguments: serde_json::json!({"expression": "1+1"}),
            result_size: 1,
            duration_ms: 3,
            outcome: AuditOutcome::Blocked,
            at: chrono::Utc::now(),
        };
        let row = audit_row(record.clone()).unwrap();
        assert_eq!(row.run_id, id);
        assert_eq!(row.outcome, "blocked");
        assert!(audit_row(AuditRecord {
            run_id: "nope".into(),
            ..record
        })
        .is_none());
    }
}
