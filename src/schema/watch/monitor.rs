//! The watch's state: the sources as last observed, each API's state as last reported, and the
//! APIs changed since, with when they are due. It does no I/O, and its debounce runs on the
//! times it is given (only the events' own timestamps read the clock): the engine hands it what
//! each cluster's watcher and probe say, with when, and it tells the [`Listener`] what follows.
use std::collections::{BTreeMap, BTreeSet};

use kube::api::DynamicObject;
use kube::runtime::watcher;
use tokio::time::Instant;

use super::feed::Unanswered;
use super::listener::{ApiUpdate, Flow, Listener, Note, Settings};
use super::{ApiState, EventType, WatchEvent, change, timestamp};
use crate::error::Result;
use crate::schema::source::SourceSchemas;
use crate::schema::{Request, StoredApi, Work, compare_for, compare_one, load};

/// A burst of writes is coalesced for at most this many debounce periods.
const MAX_COALESCE: u32 = 5;

pub(super) struct Monitor<'a> {
    /// The clusters first (index `i` is the `i`th cluster), then the files.
    sources: Vec<SourceSchemas>,
    /// The sources' labels, in the same order.
    labels: Vec<String>,
    /// The index of the source the others are judged against.
    baseline: usize,
    states: BTreeMap<String, ApiState>,
    /// Per cluster, whether it answered when last asked.
    up: Vec<bool>,
    /// Per cluster, the CRDs of a relist in progress (between `Init` and `InitDone`).
    listing: Vec<Option<BTreeMap<String, StoredApi>>>,
    /// Per cluster, whether its first list is complete.
    synced: Vec<bool>,
    /// API name -> the sources whose change touched it.
    dirty: BTreeMap<String, BTreeSet<String>>,
    first_dirty: Option<Instant>,
    last_dirty: Option<Instant>,
    request: &'a Request,
    settings: &'a Settings,
}

/// A CRD as one watch event shows it.
enum Read {
    /// Selected, in the compact form the comparison reads.
    Selected(String, StoredApi),
    /// Not selected (by name, group or labels).
    NotSelected,
    /// Not a valid CRD.
    Invalid,
}

impl<'a> Monitor<'a> {
    /// `clusters` are the watched sources, not listed yet (their `apis` are ignored); `files`
    /// are compared too but not watched.
    pub fn new(
        clusters: Vec<SourceSchemas>,
        files: Vec<SourceSchemas>,
        request: &'a Request,
        settings: &'a Settings,
    ) -> Monitor<'a> {
        let watched = clusters.len();
        let sources: Vec<SourceSchemas> = clusters
            .into_iter()
            .map(|c| SourceSchemas {
                apis: BTreeMap::new(),
                ..c
            })
            .chain(files)
            .collect();
        Monitor {
            labels: sources.iter().map(|s| s.label.clone()).collect(),
            baseline: request.baseline_index(&sources),
            sources,
            states: BTreeMap::new(),
            up: vec![true; watched],
            listing: vec![None; watched],
            synced: vec![false; watched],
            dirty: BTreeMap::new(),
            first_dirty: None,
            last_dirty: None,
            request,
            settings,
        }
    }

    /// Whether every cluster has completed its first list.
    pub fn synced(&self) -> bool {
        self.synced.iter().all(|s| *s)
    }

    /// Whether cluster `i` answered when last asked.
    pub fn up(&self, i: usize) -> bool {
        self.up[i]
    }

    /// Takes in one event of cluster `i`'s watcher, seen at `now`. An event from a cluster
    /// marked lost is the proof that it answers again: `source-back` comes first, so that the
    /// change the event carries never precedes it.
    pub fn watched(
        &mut self,
        i: usize,
        event: watcher::Event<DynamicObject>,
        now: Instant,
        listener: &mut impl Listener,
    ) -> Result<Flow> {
        let flow = if self.up[i] {
            Flow::Continue
        } else {
            self.back(i, now, listener)?
        };
        let label = self.sources[i].label.clone();
        match event {
            watcher::Event::Init => self.listing[i] = Some(BTreeMap::new()),
            watcher::Event::InitApply(crd) => {
                if let Read::Selected(name, api) = self.stored(&label, &crd, listener) {
                    self.listing[i].get_or_insert_default().insert(name, api);
                }
            }
            watcher::Event::InitDone => {
                let listed = self.listing[i].take().unwrap_or_default();
                let apis = &mut self.sources[i].apis;
                let names: BTreeSet<String> = apis.keys().chain(listed.keys()).cloned().collect();
                let changed: Vec<String> = names
                    .into_iter()
                    .filter(|n| match (apis.get(n), listed.get(n)) {
                        (Some(a), Some(b)) => !a.same_crd_as(b),
                        _ => true,
                    })
                    .collect();
                *apis = listed;
                self.synced[i] = true;
                for name in changed {
                    self.touch(name, &label, now);
                }
            }
            watcher::Event::Apply(crd) => match self.stored(&label, &crd, listener) {
                Read::Selected(name, api) => {
                    let apis = &mut self.sources[i].apis;
                    if apis.get(&name).is_none_or(|old| !old.same_crd_as(&api)) {
                        apis.insert(name.clone(), api);
                        self.touch(name, &label, now);
                    }
                }
                // No longer selected (its labels changed): left out from now, as if deleted.
                Read::NotSelected => {
                    let name = crd.metadata.name.clone().unwrap_or_default();
                    if self.sources[i].apis.remove(&name).is_some() {
                        self.touch(name, &label, now);
                    }
                }
                // Not a valid CRD (the listener was told): the last valid one stays.
                Read::Invalid => {}
            },
            watcher::Event::Delete(crd) => {
                let name = crd.metadata.name.clone().unwrap_or_default();
                if self.sources[i].apis.remove(&name).is_some() {
                    self.touch(name, &label, now);
                }
            }
        }
        Ok(flow)
    }

    /// The CRD in the compact form the comparison reads, if selected and valid (the listener
    /// is told why one is not valid).
    fn stored(&self, label: &str, crd: &DynamicObject, listener: &mut impl Listener) -> Read {
        let manifest = serde_json::json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": crd.metadata.name, "labels": crd.metadata.labels},
            "spec": crd.data.get("spec"),
        });
        let name = crd.metadata.name.clone().unwrap_or_default();
        match load::crd_from_value(
            &manifest,
            &format!("{label} {name}"),
            &self.request.selection,
        ) {
            Ok(Some(api)) => Read::Selected(api.name.clone(), StoredApi::crd(&api)),
            Ok(None) => Read::NotSelected,
            Err(e) => {
                listener.note(Note::Warning(format!("{label}: CRD {name} left out: {e}")));
                Read::Invalid
            }
        }
    }

    fn touch(&mut self, name: String, source: &str, now: Instant) {
        self.dirty
            .entry(name)
            .or_default()
            .insert(source.to_string());
        self.first_dirty.get_or_insert(now);
        self.last_dirty = Some(now);
    }

    /// The APIs changed since the last call, with the sources that changed each.
    fn take_dirty(&mut self) -> BTreeMap<String, BTreeSet<String>> {
        (self.first_dirty, self.last_dirty) = (None, None);
        std::mem::take(&mut self.dirty)
    }

    /// When the changes seen so far are due: the debounce after the last one, and no later
    /// than a few debounce periods after the first, so that a steady stream still reports.
    pub fn due(&self) -> Option<Instant> {
        let (first, last) = (self.first_dirty?, self.last_dirty?);
        let debounce = self.settings.debounce;
        Some((last + debounce).min(first + debounce * MAX_COALESCE))
    }

    /// Every cluster has listed: compares everything once and hands the listener each API's
    /// state, then the report. The first lists are the initial state, not changes.
    pub fn start(&mut self, listener: &mut impl Listener) -> Result<()> {
        self.take_dirty();
        let mut report = tokio::task::block_in_place(|| {
            compare_for(
                &self.sources,
                self.request,
                self.settings.show_informational,
                Work::Both,
            )
        });
        for api in &mut report.apis {
            let state = ApiState::of(api);
            self.states.insert(api.name.clone(), state);
        }
        for name in self.states.keys() {
            listener.api(ApiUpdate {
                name,
                state: self.states.get(name),
                sources: &self.labels,
                baseline: &self.labels[self.baseline],
            })?;
        }
        listener.ready(&report)
    }

    /// A probe's answer for cluster `i`: `source-lost` when a cluster that answered stops,
    /// `source-back` (and a recompute of everything it serves) when it answers again.
    pub fn probed(
        &mut self,
        i: usize,
        answer: std::result::Result<(), Unanswered>,
        now: Instant,
        listener: &mut impl Listener,
    ) -> Result<Flow> {
        match (self.up[i], answer) {
            (true, Err(unanswered)) => {
                self.up[i] = false;
                let event = WatchEvent::source(
                    EventType::SourceLost,
                    &self.labels[i],
                    timestamp(),
                    Some(unanswered.to_string()),
                );
                listener.event(&event)
            }
            (false, Ok(())) => self.back(i, now, listener),
            _ => Ok(Flow::Continue),
        }
    }

    /// Cluster `i` answers again: `source-back`, and everything it serves is recomputed (its
    /// watcher delivers what changed meanwhile, or lists afresh, either way).
    fn back(&mut self, i: usize, now: Instant, listener: &mut impl Listener) -> Result<Flow> {
        self.up[i] = true;
        let label = self.labels[i].clone();
        let names: Vec<String> = self.sources[i].apis.keys().cloned().collect();
        for name in names {
            self.touch(name, &label, now);
        }
        let event = WatchEvent::source(EventType::SourceBack, &label, timestamp(), None);
        listener.event(&event)
    }

    /// Recomputes the APIs changed since the last flush, and reports each that changed.
    pub fn flush(&mut self, listener: &mut impl Listener) -> Result<Flow> {
        for (name, sources) in self.take_dirty() {
            let after = tokio::task::block_in_place(|| {
                compare_one(&self.sources, self.request, &name).map(|mut r| ApiState::of(&mut r))
            });
            let before = self.states.get(&name);
            let event = change(
                &name,
                before,
                after.as_ref(),
                sources.into_iter().collect(),
                timestamp(),
            );
            match after {
                Some(state) => self.states.insert(name.clone(), state),
                None => self.states.remove(&name),
            };
            listener.api(ApiUpdate {
                name: &name,
                state: self.states.get(&name),
                sources: &self.labels,
                baseline: &self.labels[self.baseline],
            })?;
            if let Some(event) = event
                && listener.event(&event)? == Flow::Stop
            {
                return Ok(Flow::Stop);
            }
        }
        Ok(Flow::Continue)
    }
}

#[cfg(test)]
mod tests;
