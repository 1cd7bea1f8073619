//! The repo map's ranking and rendering.
//!
//! Files are the nodes of a graph with an edge from each file that references an identifier to
//! each (other) file that defines it, weighted by how telling the identifier is and how often
//! the file uses it. A personalised PageRank toward the files the user works in ranks the files;
//! each file's rank flows along its edges to the (file, identifier) definitions it reaches, and
//! the best of those are rendered with the lines of the items around them until the budget.
//!
//! Names link files of one language family only (see [`family`]).
//!
//! An identifier defined in D files and referenced from R files makes up to D×R edges (think of
//! `new`), so edges are never built one by one: each identifier is a hub that gathers what its
//! referencing files send and passes the sum to each defining file, less what a file would send
//! to itself. That is the same PageRank in O(D+R) per identifier and iteration.

use std::collections::hash_map::DefaultHasher;
use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hash, Hasher};
use std::path::{Path, PathBuf};

use super::{cut_chars, FileEntry, MapRequest, RepoMap};
use crate::Language;

const DAMPING: f64 = 0.85;
const TOLERANCE: f64 = 1e-6;
const MAX_ITERATIONS: usize = 100;
/// The active file's share of the personalisation against 1 for each other file of interest.
const ACTIVE_WEIGHT: f64 = 10.0;
/// A definition nothing references still gets this share of its file's rank (split between the
/// file's definitions), so such files show up after what is referenced, in their files' order.
const UNREFERENCED_SHARE: f64 = 1e-3;
/// A definition of a name the prompt mentions counts this many times more.
const MENTIONED_BOOST: f64 = 10.0;
/// Below this many edges per thread, PageRank runs on fewer threads (on one, for a small
/// workspace): handing vectors between threads would cost more than it saves.
const PARALLEL_EDGES_PER_THREAD: usize = 100_000;
/// Map lines are cut to this many characters.
const MAX_MAP_LINE_CHARS: usize = 100;
/// A rendered definition takes at least its `{line:>6}\t` prefix, a character and a newline.
const MIN_DEFINITION_BYTES: usize = 9;

pub(super) fn repo_map(
    files: &HashMap<PathBuf, FileEntry>,
    request: &MapRequest,
    display: &dyn Fn(&Path) -> String,
) -> RepoMap {
    if files.is_empty() || request.max_tokens == 0 {
        return RepoMap::default();
    }
    // Byte order of the paths: a stable node order (so a stable map for a stable index), and
    // much cheaper to sort by than `Path`'s component order.
    let mut nodes: Vec<(&PathBuf, &FileEntry)> = files.iter().collect();
    nodes.sort_unstable_by(|a, b| {
        a.0.as_os_str()
            .as_encoded_bytes()
            .cmp(b.0.as_os_str().as_encoded_bytes())
    });
    let mentioned: HashSet<&str> = request.mentioned.iter().map(String::as_str).collect();
    let graph = Graph::build(&nodes, &mentioned);
    let personal = personalisation(&nodes, request, &mentioned);
    let edges = graph.defining.len() + graph.referencing.len();
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(edges / PARALLEL_EDGES_PER_THREAD);
    let rank = graph.pagerank(&personal, threads);
    let most = request.max_tokens.saturating_mul(4) / MIN_DEFINITION_BYTES + 1;
    let candidates = candidates(&nodes, &graph, &rank, &mentioned, most);

    // The most definitions that fit: rendering more never takes fewer bytes.
    let mut shown_paths: HashMap<u32, String> = HashMap::new();
    let mut render_top =
        |take: usize| render(&nodes, &candidates[..take], display, &mut shown_paths);
    let (mut low, mut high) = (0, candidates.len());
    let mut best = RepoMap::default();
    while low < high {
        let middle = low + (high - low).div_ceil(2);
        let map = render_top(middle);
        if map.estimated_tokens <= request.max_tokens {
            low = middle;
            best = map;
        } else {
            high = middle - 1;
        }
    }
    if best.definitions != low {
        best = render_top(low);
    }
    best
}

/// The file graph, through hubs: each name that some file defines and another references.
/// Hub `h`'s defining files are `defining[hub_defining[h]..hub_defining[h + 1]]` (ascending),
/// its referencing files `referencing[hub_referencing[h]..hub_referencing[h + 1]]`.
struct Graph {
    hub_defining: Vec<u32>,
    hub_referencing: Vec<u32>,
    /// A multiplier on what the hub's definitions score: the prompt mentions the name.
    hub_boost: Vec<f64>,
    /// Defining files.
    defining: Vec<u32>,
    /// Beside `defining`: the file's first definition of the name (an index into its
    /// definitions, which are sorted by key).
    defining_first: Vec<u32>,
    /// Referencing files, with their share of the file's out-weight (`weight / out_weight`).
    referencing: Vec<(u32, f32)>,
    /// `(defining index, referencing index)` of a file that both references and defines a
    /// name: it sends nothing to itself, so what it sent is taken back.
    own: Vec<(u32, u32)>,
    /// Files that send nothing (no out-edges): their rank restarts by the personalisation.
    dangling: Vec<u32>,
    /// Referenced names: key -> index, and index -> hub (`NO_HUB` when nothing defines it).
    name_index: KeyMap<u32>,
    hub_of_name: Vec<u32>,
}

const NO_HUB: u32 = u32::MAX;

impl Graph {
    fn build(nodes: &[(&PathBuf, &FileEntry)], mentioned: &HashSet<&str>) -> Graph {
        // Referenced names first, in one flat list of (name, file, times): most definitions
        // (fields, variants, private helpers) are never referenced from another file, so they
        // are only looked up. Flat lists grouped by a counting sort, not a list per name: a
        // large index has hundreds of thousands of names.
        let reference_groups: usize = nodes.iter().map(|(_, entry)| entry.references.len()).sum();
        let mut name_index: KeyMap<u32> =
            KeyMap::with_capacity_and_hasher(reference_groups / 4, Default::default());
        let mut names: Vec<&str> = Vec::new();
        let mut references: Vec<(u32, u32, u32)> = Vec::with_capacity(reference_groups);
        for (file, (_, entry)) in nodes.iter().enumerate() {
            for group in &entry.references {
                let name = *name_index.entry(group.key).or_insert_with(|| {
                    names.push(entry.text(group.name));
                    names.len() as u32 - 1
                });
                references.push((name, file as u32, group.lines.len));
            }
        }
        let mut definitions: Vec<(u32, u32, u32)> = Vec::new();
        for (file, (_, entry)) in nodes.iter().enumerate() {
            let mut previous = None;
            for (at, definition) in entry.definitions.iter().enumerate() {
                // Sorted by key: one lookup per name.
                if previous == Some(definition.key) {
                    continue;
                }
                previous = Some(definition.key);
                if let Some(&name) = name_index.get(&definition.key) {
                    definitions.push((name, file as u32, at as u32));
                }
            }
        }
        let (reference_start, references) = group_by_name(names.len(), &references);
        let (definition_start, definitions) = group_by_name(names.len(), &definitions);

        let mut graph = Graph {
            hub_defining: vec![0],
            hub_referencing: vec![0],
            hub_boost: Vec::new(),
            defining: Vec::new(),
            defining_first: Vec::new(),
            referencing: Vec::new(),
            own: Vec::new(),
            dangling: Vec::new(),
            name_index,
            hub_of_name: vec![NO_HUB; names.len()],
        };
        let mut weights: Vec<f64> = Vec::new();
        let mut out_weight = vec![0.0f64; nodes.len()];
        for (name, text) in names.iter().enumerate() {
            let defined = &definitions[definition_start[name]..definition_start[name + 1]];
            if defined.is_empty() {
                continue;
            }
            let is_mentioned = mentioned.contains(text);
            let multiplier = multiplier(text, is_mentioned, defined.len());
            let defining_start = graph.defining.len();
            let referencing_start = graph.referencing.len();
            let referenced = &references[reference_start[name]..reference_start[name + 1]];
            // Both lists ascend by file: walk them together.
            let mut in_defined = 0;
            let mut at = 0;
            while at < referenced.len() {
                let file = referenced[at].0;
                let mut times = 0;
                while at < referenced.len() && referenced[at].0 == file {
                    times += referenced[at].1;
                    at += 1;
                }
                while in_defined < defined.len() && defined[in_defined].0 < file {
                    in_defined += 1;
                }
                let defines_it = defined.get(in_defined).is_some_and(|(d, _)| *d == file);
                let targets = defined.len() - usize::from(defines_it);
                if targets == 0 {
                    continue;
                }
                let weight = multiplier * f64::from(times).sqrt();
                out_weight[file as usize] += weight * targets as f64;
                if defines_it {
                    graph.own.push((
                        (defining_start + in_defined) as u32,
                        graph.referencing.len() as u32,
                    ));
                }
                graph.referencing.push((file, 0.0));
                weights.push(weight);
            }
            if graph.referencing.len() == referencing_start {
                continue;
            }
            graph.hub_of_name[name] = graph.hub_boost.len() as u32;
            for &(file, first) in defined {
                graph.defining.push(file);
                graph.defining_first.push(first);
            }
            graph.hub_defining.push(graph.defining.len() as u32);
            graph.hub_referencing.push(graph.referencing.len() as u32);
            graph
                .hub_boost
                .push(if is_mentioned { MENTIONED_BOOST } else { 1.0 });
        }
        for ((file, share), weight) in graph.referencing.iter_mut().zip(weights) {
            *share = (weight / out_weight[*file as usize]) as f32;
        }
        graph.dangling = (0..nodes.len() as u32)
            .filter(|&file| out_weight[file as usize] == 0.0)
            .collect();
        graph
    }

    fn hubs(&self) -> usize {
        self.hub_boost.len()
    }

    fn defining_range(&self, hub: usize) -> std::ops::Range<usize> {
        self.hub_defining[hub] as usize..self.hub_defining[hub + 1] as usize
    }

    fn referencing_range(&self, hub: usize) -> std::ops::Range<usize> {
        self.hub_referencing[hub] as usize..self.hub_referencing[hub + 1] as usize
    }

    /// What hub `hub` sends each of its defining files under `rank` (before self-corrections).
    fn sent(&self, hub: usize, rank: &[f64]) -> f64 {
        self.referencing[self.referencing_range(hub)]
            .iter()
            .map(|&(file, share)| rank[file as usize] * f64::from(share))
            .sum()
    }

    /// Adds what the hubs in `hubs` send under `rank` into `flow` (a slot per file).
    fn spread(&self, hubs: std::ops::Range<usize>, rank: &[f64], flow: &mut [f64]) {
        for hub in hubs {
            let sent = self.sent(hub, rank);
            for &file in &self.defining[self.defining_range(hub)] {
                flow[file as usize] += sent;
            }
        }
    }

    /// The hubs cut into `parts` runs of about equal work (edges).
    fn parts(&self, parts: usize) -> Vec<std::ops::Range<usize>> {
        let work =
            |hub: usize| self.hub_defining[hub] as usize + self.hub_referencing[hub] as usize;
        let total = work(self.hubs());
        let mut ranges = Vec::with_capacity(parts);
        let mut start = 0;
        for part in 1..=parts {
            let target = total * part / parts;
            let end = if part == parts {
                self.hubs()
            } else {
                // The first hub boundary at or past the part's share of the edges.
                (start..self.hubs())
                    .find(|&hub| work(hub) >= target)
                    .unwrap_or(self.hubs())
            };
            ranges.push(start..end);
            start = end;
        }
        ranges
    }

    /// Power iteration: `rank = d·(flow + dangling·p) + (1-d)·p`, from uniform, until the L1
    /// change is below the tolerance. On a large graph the hubs are spread over threads, each
    /// adding into its own flow vector; the vectors are summed in a fixed order, so the ranks
    /// are the same run to run (on a machine with as many cores).
    fn pagerank(&self, personal: &[f64], threads: usize) -> Vec<f64> {
        let count = personal.len();
        let parts = self.parts(threads.max(1));
        let mut rank = vec![1.0 / count as f64; count];
        std::thread::scope(|scope| {
            // Worker i (for parts 1..): gets the ranks and a flow vector to fill, sends it back.
            type Work = (std::sync::Arc<Vec<f64>>, Vec<f64>);
            let mut workers = Vec::new();
            for part in parts.iter().skip(1) {
                let (work_tx, work_rx) = std::sync::mpsc::channel::<Work>();
                let (done_tx, done_rx) = std::sync::mpsc::channel::<Vec<f64>>();
                let part = part.clone();
                scope.spawn(move || {
                    while let Ok((rank, mut flow)) = work_rx.recv() {
                        flow.fill(0.0);
                        self.spread(part.clone(), &rank, &mut flow);
                        drop(rank);
                        if done_tx.send(flow).is_err() {
                            break;
                        }
                    }
                });
                workers.push((work_tx, done_rx, Some(vec![0.0; count])));
            }
            let mut next = vec![0.0; count];
            for _ in 0..MAX_ITERATIONS {
                let shared = std::sync::Arc::new(std::mem::take(&mut rank));
                for (work_tx, _, flow) in &mut workers {
                    if let Some(flow) = flow.take() {
                        // A worker that is gone panicked: the scope re-raises its panic.
                        let _ = work_tx.send((shared.clone(), flow));
                    }
                }
                next.fill(0.0);
                self.spread(parts[0].clone(), &shared, &mut next);
                for (_, done_rx, slot) in &mut workers {
                    let Ok(flow) = done_rx.recv() else {
                        return;
                    };
                    next.iter_mut()
                        .zip(&flow)
                        .for_each(|(sum, part)| *sum += part);
                    *slot = Some(flow);
                }
                let current =
                    std::sync::Arc::try_unwrap(shared).unwrap_or_else(|shared| (*shared).clone());
                for &(_, referencing) in &self.own {
                    let (file, share) = self.referencing[referencing as usize];
                    next[file as usize] -= current[file as usize] * f64::from(share);
                }
                let stranded: f64 = self.dangling.iter().map(|&at| current[at as usize]).sum();
                let mut change = 0.0;
                for at in 0..count {
                    let value = DAMPING * (next[at] + stranded * personal[at])
                        + (1.0 - DAMPING) * personal[at];
                    change += (value - current[at]).abs();
                    next[at] = value;
                }
                rank = std::mem::replace(&mut next, current);
                if change < TOLERANCE {
                    break;
                }
            }
            // Dropping the senders ends the workers.
            workers.clear();
        });
        rank
    }

    /// Whether `file`'s definitions of the name keyed `key` receive rank from other files.
    fn linked(&self, file: u32, key: u64) -> bool {
        let Some(&name) = self.name_index.get(&key) else {
            return false;
        };
        let hub = self.hub_of_name[name as usize];
        hub != NO_HUB
            && self.defining[self.defining_range(hub as usize)]
                .binary_search(&file)
                .is_ok()
    }
}

/// `pairs` of (name, file, value), in file order, grouped by name with a counting sort (so
/// still in file order within a name): the start of each name's group, and the (file, value)s.
fn group_by_name(names: usize, pairs: &[(u32, u32, u32)]) -> (Vec<usize>, Vec<(u32, u32)>) {
    let mut start = vec![0usize; names + 1];
    for &(name, _, _) in pairs {
        start[name as usize + 1] += 1;
    }
    for name in 0..names {
        start[name + 1] += start[name];
    }
    let mut next = start.clone();
    let mut grouped = vec![(0u32, 0u32); pairs.len()];
    for &(name, file, value) in pairs {
        grouped[next[name as usize]] = (file, value);
        next[name as usize] += 1;
    }
    (start, grouped)
}

/// The best definitions, best first, at most about `most` of them: every definition some file
/// sends rank to competes by what it receives (plus its share of its file's rank); of the
/// others, which score by their file's rank alone, only as many as a map could show, from the
/// best files.
fn candidates(
    nodes: &[(&PathBuf, &FileEntry)],
    graph: &Graph,
    rank: &[f64],
    mentioned: &HashSet<&str>,
    most: usize,
) -> Vec<Candidate> {
    let base: Vec<f64> = nodes
        .iter()
        .enumerate()
        .map(|(file, (_, entry))| {
            rank[file] * UNREFERENCED_SHARE / entry.definitions.len().max(1) as f64
        })
        .collect();
    let candidate = |file: usize, at: usize, score: f64| Candidate {
        score,
        file: file as u32,
        line: nodes[file].1.definitions[at].line,
        definition: at as u32,
    };

    // What each defining entry receives under the final ranks; the best entries only are
    // expanded into their definitions (an entry is one or more definitions of one name).
    let mut received = vec![0.0f64; graph.defining.len()];
    for hub in 0..graph.hubs() {
        let sent = graph.sent(hub, rank);
        received[graph.defining_range(hub)].fill(sent);
    }
    for &(defining, referencing) in &graph.own {
        let (file, share) = graph.referencing[referencing as usize];
        received[defining as usize] -= rank[file as usize] * f64::from(share);
    }
    let mut entries: Vec<(f64, u32)> = Vec::with_capacity(graph.defining.len());
    for hub in 0..graph.hubs() {
        for at in graph.defining_range(hub) {
            let file = graph.defining[at] as usize;
            let score = (received[at].max(0.0) + base[file]) * graph.hub_boost[hub];
            entries.push((score, at as u32));
        }
    }
    let by_score = |a: &(f64, u32), b: &(f64, u32)| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1));
    if most < entries.len() {
        entries.select_nth_unstable_by(most, by_score);
        entries.truncate(most);
    }
    let mut candidates: Vec<Candidate> = Vec::new();
    for (score, at) in entries {
        let file = graph.defining[at as usize] as usize;
        let definitions = &nodes[file].1.definitions;
        let first = graph.defining_first[at as usize] as usize;
        let key = definitions[first].key;
        for (offset, definition) in definitions[first..].iter().enumerate() {
            if definition.key != key {
                break;
            }
            candidates.push(candidate(file, first + offset, score));
        }
    }

    let boost = |name: &str| {
        if mentioned.contains(name) {
            MENTIONED_BOOST
        } else {
            1.0
        }
    };
    let mut by_base: Vec<(f64, usize)> = base.iter().copied().zip(0..).collect();
    by_base.sort_unstable_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    let mut unlinked = 0;
    for (base, file) in by_base {
        if unlinked >= most {
            break;
        }
        for (at, definition) in nodes[file].1.definitions.iter().enumerate() {
            if !graph.linked(file as u32, definition.key) {
                let name = nodes[file].1.text(definition.name);
                candidates.push(candidate(file, at, base * boost(name)));
                unlinked += 1;
            }
        }
    }
    // A mentioned name's boost can lift an unlinked definition of a lesser file over the rest.
    if !mentioned.is_empty() {
        for (file, (_, entry)) in nodes.iter().enumerate() {
            for (at, definition) in entry.definitions.iter().enumerate() {
                if mentioned.contains(entry.text(definition.name))
                    && !graph.linked(file as u32, definition.key)
                {
                    candidates.push(candidate(file, at, base[file] * MENTIONED_BOOST));
                }
            }
        }
        candidates.sort_unstable_by_key(|candidate| (candidate.file, candidate.definition));
        candidates.dedup_by_key(|candidate| (candidate.file, candidate.definition));
    }

    let by_rank = |a: &Candidate, b: &Candidate| {
        b.score
            .total_cmp(&a.score)
            .then(a.file.cmp(&b.file))
            .then(a.line.cmp(&b.line))
            .then(a.definition.cmp(&b.definition))
    };
    if most < candidates.len() {
        candidates.select_nth_unstable_by(most, by_rank);
        candidates.truncate(most);
    }
    candidates.sort_unstable_by(by_rank);
    candidates
}

#[derive(Debug, Clone, Copy)]
struct Candidate {
    score: f64,
    file: u32,
    line: u32,
    /// Index into the file's definitions.
    definition: u32,
}

/// A map keyed by [`name_key`]s, already hashes.
type KeyMap<V> = HashMap<u64, V, BuildHasherDefault<KeyHasher>>;

#[derive(Default)]
struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for byte in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(*byte);
        }
    }

    fn write_u64(&mut self, key: u64) {
        self.0 = key;
    }
}

/// The key a name links files by: a hash of the name and its language family (computed once,
/// when the file is parsed, so ranking hashes no strings). Two names sharing a 64-bit hash
/// would link files they should not; at the index's scale that is astronomically unlikely.
pub(super) fn name_key(language: Language, name: &str) -> u64 {
    let mut hasher = DefaultHasher::new();
    family(language).hash(&mut hasher);
    name.hash(&mut hasher);
    hasher.finish()
}

/// Languages whose files can use each other's definitions: a JavaScript call to `entries` says
/// nothing about a Rust field named `entries`.
fn family(language: Language) -> u8 {
    match language {
        Language::Rust => 0,
        Language::Python => 1,
        Language::JavaScript | Language::TypeScript | Language::Tsx => 2,
        Language::Go => 3,
        Language::Java => 4,
        Language::C | Language::Cpp => 5,
        Language::Ruby => 6,
        Language::CSharp => 7,
        Language::Bash => 8,
        Language::Lua => 9,
    }
}

/// How telling an identifier is: what the prompt names, long structured names (not `x`, `new`)
/// more; private-looking names and names defined all over less.
fn multiplier(name: &str, mentioned: bool, defined_in: usize) -> f64 {
    let mut multiplier = 1.0;
    if mentioned {
        multiplier *= 10.0;
    }
    let structured = name.contains('_')
        || (name.chars().any(char::is_lowercase) && name.chars().any(char::is_uppercase));
    if name.chars().count() >= 8 && structured {
        multiplier *= 10.0;
    }
    if name.starts_with('_') {
        multiplier *= 0.1;
    }
    if defined_in > 5 {
        multiplier *= 0.1;
    }
    multiplier
}

/// Where the random surfer restarts: the active file most, then open and edited files and files
/// named like a mentioned identifier; anywhere when there are none. Sums to 1.
fn personalisation(
    nodes: &[(&PathBuf, &FileEntry)],
    request: &MapRequest,
    mentioned: &HashSet<&str>,
) -> Vec<f64> {
    let mut personal = vec![0.0; nodes.len()];
    let index: HashMap<&Path, usize> = nodes
        .iter()
        .enumerate()
        .map(|(at, (path, _))| (path.as_path(), at))
        .collect();
    let mut add = |path: &Path, weight: f64| {
        if let Some(&at) = index.get(path) {
            personal[at] += weight;
        }
    };
    if let Some(active) = &request.active {
        add(active, ACTIVE_WEIGHT);
    }
    for path in request.open.iter().chain(&request.edited) {
        add(path, 1.0);
    }
    if !mentioned.is_empty() {
        for (at, (path, _)) in nodes.iter().enumerate() {
            if path
                .file_stem()
                .and_then(|stem| stem.to_str())
                .is_some_and(|stem| mentioned.contains(stem))
            {
                personal[at] += 1.0;
            }
        }
    }
    let total: f64 = personal.iter().sum();
    if total > 0.0 {
        personal.iter_mut().for_each(|weight| *weight /= total);
    } else {
        personal.fill(1.0 / nodes.len() as f64);
    }
    personal
}

/// The first `chosen` definitions, grouped by file (files in the order of their best
/// definition), each file's lines in order: definitions with the first lines of their items.
fn render(
    nodes: &[(&PathBuf, &FileEntry)],
    chosen: &[Candidate],
    display: &dyn Fn(&Path) -> String,
    shown_paths: &mut HashMap<u32, String>,
) -> RepoMap {
    let mut order: Vec<u32> = Vec::new();
    let mut lines: HashMap<u32, Vec<u32>> = HashMap::new();
    for candidate in chosen {
        let entry = nodes[candidate.file as usize].1;
        let definition = &entry.definitions[candidate.definition as usize];
        let file_lines = lines.entry(candidate.file).or_insert_with(|| {
            order.push(candidate.file);
            Vec::new()
        });
        file_lines.extend(entry.scopes(definition));
        file_lines.push(definition.line);
    }
    let mut text = String::new();
    let mut files = Vec::with_capacity(order.len());
    for file in order {
        let (path, entry) = nodes[file as usize];
        let shown = shown_paths.entry(file).or_insert_with(|| display(path));
        text.push_str(shown);
        text.push_str(":\n");
        let mut file_lines = lines.remove(&file).unwrap_or_default();
        file_lines.sort_unstable();
        file_lines.dedup();
        for line in file_lines {
            let line_text = entry.line_text(line).unwrap_or("");
            text.push_str(&format!(
                "{:>6}\t{}\n",
                line + 1,
                cut_chars(line_text, MAX_MAP_LINE_CHARS)
            ));
        }
        files.push(path.clone());
    }
    RepoMap {
        estimated_tokens: text.len().div_ceil(4),
        text,
        files,
        definitions: chosen.len(),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::{FileSource, SymbolIndex};

    /// An index of in-memory Python files: `a` calls into `b` and `c`, `b` into `c`, `d` is
    /// on its own.
    fn index() -> SymbolIndex {
        let files = [
            (
                "a.py",
                "def run_all():\n    load_config()\n    save_results()\n",
            ),
            ("b.py", "def load_config():\n    save_results()\n"),
            ("c.py", "def save_results():\n    pass\n"),
            ("d.py", "def lonely_helper():\n    pass\n"),
        ];
        let index = SymbolIndex::new();
        index.update(
            files
                .iter()
                .map(|(path, text)| {
                    let text = Arc::from(*text);
                    (PathBuf::from(path), FileSource::Buffer { version: 1, text })
                })
                .collect(),
            None,
        );
        index
    }

    fn ranks(index: &SymbolIndex, personal: &[f64], threads: usize) -> Vec<f64> {
        let files = index.files.read().unwrap();
        let mut nodes: Vec<(&PathBuf, &FileEntry)> = files.iter().collect();
        nodes.sort_by(|a, b| a.0.cmp(b.0));
        Graph::build(&nodes, &HashSet::new()).pagerank(personal, threads)
    }

    #[test]
    fn ranks_sum_to_one_and_flow_toward_what_is_used() {
        let index = index();
        let rank = ranks(&index, &[0.25; 4], 1);
        assert!((rank.iter().sum::<f64>() - 1.0).abs() < 1e-9, "{rank:?}");
        // c.py is used by both others; d.py by none.
        assert!(rank[2] > rank[1] && rank[1] > rank[0], "{rank:?}");
        assert!(rank[3] < rank[2], "{rank:?}");

        let toward_d = ranks(&index, &[0.0, 0.0, 0.0, 1.0], 1);
        assert!(toward_d[3] > 0.9, "{toward_d:?}");
    }

    #[test]
    fn pagerank_on_threads_matches_pagerank_on_one() {
        let index = index();
        let personal = [0.7, 0.1, 0.1, 0.1];
        let one = ranks(&index, &personal, 1);
        for threads in [2, 3, 8] {
            let many = ranks(&index, &personal, threads);
            for (a, b) in one.iter().zip(&many) {
                assert!(
                    (a - b).abs() < 1e-12,
                    "{threads} threads: {many:?} vs {one:?}"
                );
            }
        }
    }

    #[test]
    fn parts_cover_every_hub_once() {
        let index = index();
        let files = index.files.read().unwrap();
        let nodes: Vec<(&PathBuf, &FileEntry)> = files.iter().collect();
        let graph = Graph::build(&nodes, &HashSet::new());
        for parts in 1..6 {
            let ranges = graph.parts(parts);
            assert_eq!(ranges.len(), parts);
            assert_eq!(ranges[0].start, 0);
            assert_eq!(ranges[parts - 1].end, graph.hubs());
            for pair in ranges.windows(2) {
                assert_eq!(pair[0].end, pair[1].start);
            }
        }
    }

    #[test]
    fn long_structured_names_count_more_and_private_or_common_ones_less() {
        assert_eq!(multiplier("x", false, 1), 1.0);
        assert_eq!(multiplier("parse_config", false, 1), 10.0);
        assert_eq!(multiplier("parseConfig", false, 1), 10.0);
        assert_eq!(multiplier("parseconfig", false, 1), 1.0);
        assert_eq!(multiplier("new", true, 1), 10.0);
        assert!((multiplier("_private_helper", false, 1) - 1.0).abs() < 1e-12);
        assert!((multiplier("new", false, 6) - 0.1).abs() < 1e-12);
    }
}
