//! What a watch tells whoever follows it, and what it is told: the [`Listener`] and the types
//! of its calls. The engine calls a listener and the monitor decides what it is told; both name
//! these, so they live apart from either.
use std::time::Duration;

use super::{ApiState, WatchEvent};
use crate::error::Result;
use crate::schema::report::Report;

/// What a watch does besides the comparison its [`Request`](crate::schema::Request) describes.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Writes within this long of each other are recomputed (and reported) together.
    pub debounce: Duration,
    /// The initial report shows informational findings in its table.
    pub show_informational: bool,
}

/// Whether the watch goes on after a listener's call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    Continue,
    Stop,
}

/// How a watch ended (other than by an error).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// The `stop` future the watch was given resolved.
    Stopped,
    /// The listener answered [`Flow::Stop`].
    ByListener,
}

/// Something worth saying that changes nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Note {
    /// A CRD left out of the comparison, and why.
    Warning(String),
    /// Detail for -v (1) or -vv (2): a watch error, which a probe then judges.
    Detail(u8, String),
}

/// One API as the watch sees it now.
#[derive(Debug, Clone, Copy)]
pub struct ApiUpdate<'a> {
    pub name: &'a str,
    /// `None` once no source has the API.
    pub state: Option<&'a ApiState>,
    /// Every source's label, the clusters first, in the request's order.
    pub sources: &'a [String],
    /// The label of the source the others are judged against.
    pub baseline: &'a str,
}

/// Who follows a watch. The calls come in the order things happen; an error a call returns ends
/// the watch with that error.
pub trait Listener {
    /// An API's state: once per API before [`Listener::ready`], then after each recompute of
    /// it, before the event that recompute causes (if any).
    fn api(&mut self, update: ApiUpdate<'_>) -> Result<()>;

    /// Every cluster has listed its CRDs: `report` is the comparison that the events after it
    /// are changes of.
    fn ready(&mut self, report: &Report) -> Result<()>;

    /// An API changed, or a cluster stopped or started answering.
    fn event(&mut self, event: &WatchEvent) -> Result<Flow>;

    fn note(&mut self, note: Note);
}
