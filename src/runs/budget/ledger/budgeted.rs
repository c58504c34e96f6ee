//! `Budgeted`: a run's model wrapped so that each call reserves before it is made and is
//! settled, priced, after it (at reagent's estimate when the provider reported no usage).

use std::sync::Arc;

use async_trait::async_trait;
use futures::StreamExt;

use super::estimate::{reported_or_estimated, Written};
use super::Ledger;
use crate::agent::context::estimate_tokens;
use crate::domain::{Cost, Price};
use crate::llm::price::priced;
use crate::llm::{
    Abilities, ChatRequest, ChatResponse, ChatStream, Llm, LlmError, StreamEvent, Usage,
};

/// `inner` (the registry's `name`) with its calls through `ledger`.
pub(super) fn wrap(
    ledger: &Arc<Ledger>,
    name: &str,
    inner: Arc<dyn Llm>,
    price: Option<Price>,
) -> Arc<dyn Llm> {
    Arc::new(Budgeted {
        inner,
        name: name.to_string(),
        price,
        ledger: ledger.clone(),
    })
}

/// A model whose calls go through a run's [`Ledger`].
struct Budgeted {
    inner: Arc<dyn Llm>,
    /// The registry name (prices and usage are by it).
    name: String,
    price: Option<Price>,
    ledger: Arc<Ledger>,
}

impl Budgeted {
    /// The call's estimated prompt, and its worst case: that and the most it may write.
    fn worst_case(&self, request: &ChatRequest) -> (u64, u64, Option<Cost>) {
        let prompt = estimate_tokens(&request.messages, &request.tools) as u64;
        let out = u64::from(
            request
                .max_tokens
                .unwrap_or_else(|| self.inner.max_output_tokens()),
        );
        let cost = self.price.map(|p| p.worst_case(prompt, out));
        (prompt, prompt.saturating_add(out), cost)
    }

    /// What a failed call used is unknown: its reservation is given back.
    fn failed(&self) -> Usage {
        let none = Usage {
            llm_calls: 1,
            ..Usage::default()
        };
        priced(none, self.price.as_ref())
    }
}

#[async_trait]
impl Llm for Budgeted {
    crate::llm::forward_llm_description!(inner);

    async fn chat(&self, request: ChatRequest) -> Result<ChatResponse, LlmError> {
        let (prompt, tokens, cost) = self.worst_case(&request);
        let hold = self.ledger.reserve(tokens, cost).await?;
        match self.inner.chat(request).await {
            Ok(mut r) => {
                let usage = reported_or_estimated(r.usage, prompt, Written::of(&r));
                r.usage = priced(usage, self.price.as_ref());
                self.ledger.settle(hold, &self.name, r.usage).await;
                Ok(r)
            }
            Err(e) => {
                self.ledger.settle(hold, &self.name, self.failed()).await;
                Err(e)
            }
        }
    }

    async fn stream_chat(&self, request: ChatRequest) -> Result<ChatStream, LlmError> {
        let (prompt, tokens, cost) = self.worst_case(&request);
        let hold = self.ledger.reserve(tokens, cost).await?;
        let stream = match self.inner.stream_chat(request).await {
            Ok(s) => s,
            Err(e) => {
                self.ledger.settle(hold, &self.name, self.failed()).await;
                return Err(e);
            }
        };
        let (ledger, name, price) = (self.ledger.clone(), self.name.clone(), self.price);
        let mut hold = Some(hold);
        let mut written = Written::default();
        // The usage event comes once, at the end: it is priced there and the call settled (a
        // reserved one joins the run's pending settlements at once, before the run can end; a
        // usage record alone is written in its own task, so the reader is not held up). A
        // stream dropped before it leaves the hold to the run's end, which releases it.
        let settled = stream.map(move |item| match item {
            Ok(StreamEvent::Usage(u)) => {
                let u = priced(reported_or_estimated(u, prompt, written), price.as_ref());
                if let Some(s) = hold.take().and_then(|h| ledger.ended(h, &name, u)) {
                    let ledger = ledger.clone();
                    tokio::spawn(async move { ledger.settle_now(vec![s]).await });
                }
                Ok(StreamEvent::Usage(u))
            }
            other => {
                if let Ok(event) = &other {
                    written.add(event);
                }
                other
            }
        });
        Ok(Box::pin(settled))
    }
}
