//! The layout rules of docs/development.md, checked on the sources: no import cycle between the
//! child modules of any module (the crate root's top-level modules, a folder's files and
//! folders) of any workspace crate, none between the files of the lifecycle machine
//! (`controller/src/lifecycle`), and no import from the object builders, the metrics or the
//! reconcile shell up into a kind or the machine. Run alone with
//! `cargo test --test architecture`.
//!
//! Each crate's module tree is walked from its root file along its `mod` declarations, and
//! every file is tokenized (comments vanish, doc comments become string literals, which are
//! not read). A reference is any path that names a module of the same crate: `use` trees
//! (groups, globs, `self`), paths in code (`crate::a::f()`, `super::X`, `child::Y`, and paths
//! through a name a `use` brought in). A `mod` declaration is not an import: a parent that
//! only declares its children, while they use its items, is the usual shape of a folder and
//! no cycle; a parent that also takes items from a child (a `use` or a `pub use` of it) is.
//! Each resolves to the deepest module file it names: an item re-exported by
//! `crate::lifecycle::Plan` resolves to lifecycle/mod.rs, since telling where a re-export
//! points needs the compiler's name resolution. Test code is not read: modules and items
//! under `#[cfg(test)]` may import anything.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::OnceLock;

use proc_macro2::{Delimiter, Spacing, TokenStream, TokenTree};

/// A module by its path from its crate's root: `["lifecycle", "machine"]`; the root is `[]`.
type ModPath = Vec<String>;

/// The workspace crates whose module trees are checked, by their root files.
const CRATE_ROOTS: [&str; 5] = [
    "controller/src/lib.rs",
    "api/src/lib.rs",
    "webhook/src/lib.rs",
    "certs/src/lib.rs",
    "src/main.rs",
];

/// The controller's top-level modules that depend on nothing of a kind or of the machine: the
/// object builders, the metrics and the reconcile shell.
const BELOW_THE_KINDS: [&str; 3] = ["resources", "metrics", "runtime"];

/// The kinds and the lifecycle machine that they all plug into.
const KINDS_AND_THE_MACHINE: [&str; 5] = [
    "deployment",
    "session_job",
    "state_snapshot",
    "bluegreen",
    "lifecycle",
];

/// Reads a source file by its path relative to the workspace root: from disk, or from memory
/// in the scanner's own tests.
type Read<'a> = &'a dyn Fn(&Path) -> Option<String>;

/// A path written in a file that may name a module of the same crate, as written (a name a
/// `use` brought in replaced by the path it stands for), to be read from module `within`.
struct Written {
    file: PathBuf,
    line: usize,
    within: ModPath,
    segments: Vec<String>,
}

/// A reference from a file to a module of the same crate.
#[derive(Clone, Debug)]
struct Reference {
    file: PathBuf,
    line: usize,
    from: ModPath,
    to: ModPath,
    to_file: PathBuf,
    /// What the source says, for the failure message.
    text: String,
}

impl Reference {
    fn location(&self) -> String {
        format!("{}:{} `{}`", self.file.display(), self.line, self.text)
    }
}

/// One crate's non-test modules (each with the file it is written in) and their references.
struct CrateScan {
    root: PathBuf,
    modules: BTreeMap<ModPath, PathBuf>,
    references: Vec<Reference>,
}

/// Walks a crate's module tree from its root file and resolves what each file references.
fn scan_crate(root: &Path, read: Read) -> CrateScan {
    let mut walk = Walk {
        read,
        modules: BTreeMap::new(),
        written: Vec::new(),
    };
    walk.file(root, Vec::new(), true);
    let references = walk
        .written
        .iter()
        .filter_map(|w| resolve(w, &walk.modules))
        .collect();
    CrateScan {
        root: root.to_path_buf(),
        modules: walk.modules,
        references,
    }
}

/// The module tree and the paths written in it, gathered file by file. Paths are resolved
/// only once the whole tree is known, since a path may name a module declared later.
struct Walk<'a> {
    read: Read<'a>,
    modules: BTreeMap<ModPath, PathBuf>,
    written: Vec<Written>,
}

/// Where the tokens being scanned are: their file and module, and where that module's
/// `mod` declarations find their files.
struct Scope<'a> {
    file: &'a Path,
    module: ModPath,
    /// `mod x;` is `x.rs` or `x/mod.rs` here.
    children_dir: PathBuf,
    /// `#[path = "..."]` is relative to this.
    path_attribute_dir: PathBuf,
}

impl Scope<'_> {
    fn inline_child(&self, name: &str) -> Scope<'_> {
        Scope {
            file: self.file,
            module: child_of(&self.module, name),
            children_dir: self.children_dir.join(name),
            path_attribute_dir: self.children_dir.join(name),
        }
    }
}

/// The names a `use` brought into a module's scope, each with the path it stands for, so that
/// `machine::decide()` after `use super::machine;` is read as `super::machine::decide()`.
type Aliases = BTreeMap<String, Vec<String>>;

/// The attributes read before an item.
#[derive(Default)]
struct Attributes {
    test_only: bool,
    path: Option<String>,
}

impl Walk<'_> {
    /// `mod_rs`: the file is a crate root, a `mod.rs` or loaded by `#[path]`, whose children
    /// live in its own directory rather than in one named after it.
    fn file(&mut self, file: &Path, module: ModPath, mod_rs: bool) {
        let text = (self.read)(file)
            .unwrap_or_else(|| panic!("{}: declared by `mod` but cannot be read", file.display()));
        let tokens: Vec<TokenTree> = TokenStream::from_str(&text)
            .unwrap_or_else(|e| panic!("{}: cannot tokenize: {e:?}", file.display()))
            .into_iter()
            .collect();
        if starts_test_only(&tokens) {
            return;
        }
        let dir = file.parent().unwrap_or(Path::new("")).to_path_buf();
        let children_dir = if mod_rs {
            dir.clone()
        } else {
            dir.join(file.file_stem().unwrap_or_default())
        };
        self.modules.insert(module.clone(), file.to_path_buf());
        let scope = Scope {
            file,
            module,
            children_dir,
            path_attribute_dir: dir,
        };
        self.tokens(&tokens, &scope, &mut Aliases::new());
    }

    /// Reads a sequence of tokens at one nesting level, and every group inside it.
    fn tokens(&mut self, tokens: &[TokenTree], scope: &Scope, aliases: &mut Aliases) {
        let mut attributes = Attributes::default();
        let mut i = 0;
        while i < tokens.len() {
            if let Some(attribute) = attribute_at(tokens, i) {
                read_attribute(attribute, &mut attributes);
                i += if is_punct(&tokens[i + 1], '!') { 3 } else { 2 };
                continue;
            }
            if attributes.test_only {
                i = item_end(tokens, i);
                attributes = Attributes::default();
                continue;
            }
            // A visibility keeps the attributes for the item after it: `#[path] pub mod x;`.
            if is_ident(&tokens[i], "pub") {
                i += if is_group(tokens.get(i + 1), Delimiter::Parenthesis) {
                    2
                } else {
                    1
                };
                continue;
            }
            i = if is_ident(&tokens[i], "mod") && matches!(tokens.get(i + 1), Some(TokenTree::Ident(_))) {
                self.module_item(tokens, i, scope, &attributes)
            } else if is_ident(&tokens[i], "use") {
                self.use_item(tokens, i, scope, aliases)
            } else if let TokenTree::Group(group) = &tokens[i] {
                let inner: Vec<TokenTree> = group.stream().into_iter().collect();
                self.tokens(&inner, scope, aliases);
                i + 1
            } else {
                self.code_path(tokens, i, scope, aliases)
            };
            attributes = Attributes::default();
        }
    }

    /// `mod x;` (walked into its file) or `mod x { ... }` (read in place); returns the index
    /// after the item.
    fn module_item(
        &mut self,
        tokens: &[TokenTree],
        i: usize,
        scope: &Scope,
        attributes: &Attributes,
    ) -> usize {
        let name = tokens[i + 1].to_string();
        match tokens.get(i + 2) {
            Some(TokenTree::Group(body)) if body.delimiter() == Delimiter::Brace => {
                let inner: Vec<TokenTree> = body.stream().into_iter().collect();
                if !starts_test_only(&inner) {
                    let child = scope.inline_child(&name);
                    self.modules
                        .insert(child.module.clone(), scope.file.to_path_buf());
                    self.tokens(&inner, &child, &mut Aliases::new());
                }
                i + 3
            }
            _ => {
                let (file, mod_rs) = match &attributes.path {
                    Some(path) => (scope.path_attribute_dir.join(path), true),
                    None => self.child_file(&scope.children_dir, &name),
                };
                self.file(&file, child_of(&scope.module, &name), mod_rs);
                item_end(tokens, i)
            }
        }
    }

    fn child_file(&self, dir: &Path, name: &str) -> (PathBuf, bool) {
        let flat = dir.join(format!("{name}.rs"));
        if (self.read)(&flat).is_some() {
            (flat, false)
        } else {
            (dir.join(name).join("mod.rs"), true)
        }
    }

    /// `use ...;`: every path of the tree is a reference, and every name it brings in an alias.
    fn use_item(&mut self, tokens: &[TokenTree], i: usize, scope: &Scope, aliases: &mut Aliases) -> usize {
        let end = item_end(tokens, i);
        let tree = &tokens[i + 1..end.saturating_sub(1).max(i + 1)];
        let mut leaves = Vec::new();
        use_trees(tree, &[], &mut leaves);
        for leaf in leaves {
            let segments = with_alias(leaf.segments, aliases);
            if let Some(name) = leaf.binds {
                aliases.insert(name, segments.clone());
            }
            self.written.push(Written {
                file: scope.file.to_path_buf(),
                line: leaf.line,
                within: scope.module.clone(),
                segments,
            });
        }
        end
    }

    /// A path in code: `crate::a::f`, `super::X`, `$crate::m::g`, `child::Y`, `alias::Z`. Any
    /// other path is kept too and dropped at resolution if it names no module of the crate
    /// (`std::fmt`). Returns the index after the path.
    fn code_path(&mut self, tokens: &[TokenTree], i: usize, scope: &Scope, aliases: &Aliases) -> usize {
        let (first, mut j) = match (&tokens[i], tokens.get(i + 1)) {
            (TokenTree::Punct(p), Some(TokenTree::Ident(id))) if p.as_char() == '$' && id == "crate" => {
                ("crate".to_string(), i + 2)
            }
            (TokenTree::Ident(id), _) => (id.to_string(), i + 1),
            _ => return i + 1,
        };
        // A path continues through `::` followed by a name; `::<T>` ends it.
        let mut segments = vec![first];
        while path_separator_at(tokens, j) {
            match tokens.get(j + 2) {
                Some(TokenTree::Ident(id)) => segments.push(id.to_string()),
                _ => break,
            }
            j += 3;
        }
        // After another `::` (`::std::x`, `T::super_x`) a name starts no path of this crate.
        let continues_a_path = i >= 2 && path_separator_at(tokens, i - 2);
        if segments.len() > 1 && !continues_a_path {
            self.written.push(Written {
                file: scope.file.to_path_buf(),
                line: line_of(&tokens[i]),
                within: scope.module.clone(),
                segments: with_alias(segments, aliases),
            });
        }
        j
    }
}

/// A name a `use` tree brings in, with the path it stands for.
#[derive(Debug, PartialEq)]
struct UseLeaf {
    segments: Vec<String>,
    /// The name bound in scope: none for a glob or `as _`.
    binds: Option<String>,
    line: usize,
}

/// Expands a `use` tree (`a::{b::{self, C}, d::*}`) or a comma-separated list of them.
fn use_trees(tokens: &[TokenTree], prefix: &[String], out: &mut Vec<UseLeaf>) {
    for tree in tokens.split(|t| is_punct(t, ',')).filter(|tree| !tree.is_empty()) {
        use_tree(tree, prefix, out);
    }
}

fn use_tree(tree: &[TokenTree], prefix: &[String], out: &mut Vec<UseLeaf>) {
    let mut segments = prefix.to_vec();
    let mut line = tree.first().map(line_of).unwrap_or(0);
    let mut rename = None;
    let mut k = 0;
    while k < tree.len() {
        match &tree[k] {
            TokenTree::Ident(id) if id == "as" => {
                rename = tree.get(k + 1).map(|t| t.to_string());
                k += 1;
            }
            TokenTree::Ident(id) => {
                segments.push(id.to_string());
                line = line_of(&tree[k]);
            }
            TokenTree::Punct(p) if p.as_char() == '$' => segments.push("$".to_string()),
            TokenTree::Punct(p) if p.as_char() == '*' => {
                out.push(UseLeaf {
                    segments,
                    binds: None,
                    line: line_of(&tree[k]),
                });
                return;
            }
            TokenTree::Group(group) if group.delimiter() == Delimiter::Brace => {
                let inner: Vec<TokenTree> = group.stream().into_iter().collect();
                use_trees(&inner, &segments, out);
                return;
            }
            _ => {}
        }
        k += 1;
    }
    // `$crate` arrives as two tokens; `a::{self}` names `a` itself.
    if let Some(dollar) = segments.iter().position(|s| s == "$") {
        segments.remove(dollar);
    }
    if segments.len() > 1 && segments.last().is_some_and(|s| s == "self") {
        segments.pop();
    }
    let binds = match rename {
        Some(name) if name == "_" => None,
        // `use super::{self}` binds no name worth reading paths through.
        None if segments.len() == 1 => None,
        Some(name) => Some(name),
        None => segments.last().cloned(),
    };
    out.push(UseLeaf {
        segments,
        binds,
        line,
    });
}

/// A path whose first name a `use` of the same module brought in, read as the path it stands for.
fn with_alias(segments: Vec<String>, aliases: &Aliases) -> Vec<String> {
    match segments.first().and_then(|first| aliases.get(first)) {
        Some(path) if segments.len() > 1 => path.iter().chain(&segments[1..]).cloned().collect(),
        _ => segments,
    }
}

/// The module file a written path names: the deepest module of the crate it goes through.
/// `None` when it names none (another crate, a local item or variable).
fn resolve(written: &Written, modules: &BTreeMap<ModPath, PathBuf>) -> Option<Reference> {
    let absolute = absolute_path(&written.within, &written.segments, modules)?;
    let to = (0..=absolute.len())
        .rev()
        .map(|n| absolute[..n].to_vec())
        .find(|prefix| modules.contains_key(prefix))?;
    Some(Reference {
        file: written.file.clone(),
        line: written.line,
        from: written.within.clone(),
        to_file: modules[&to].clone(),
        to,
        text: written.segments.join("::"),
    })
}

/// The path from the crate root that `segments`, written in module `within`, stands for.
fn absolute_path(
    within: &ModPath,
    segments: &[String],
    modules: &BTreeMap<ModPath, PathBuf>,
) -> Option<ModPath> {
    let first = segments.first()?;
    let (mut path, mut rest) = match first.as_str() {
        "crate" => (Vec::new(), &segments[1..]),
        "self" | "super" => (within.clone(), segments),
        // Since the 2018 edition a path may start with a child module's name.
        child if modules.contains_key(&child_of(within, child)) => (within.clone(), segments),
        _ => return None,
    };
    while let Some(step) = rest.first() {
        match step.as_str() {
            "self" => {}
            "super" => {
                path.pop()?;
            }
            _ => break,
        }
        rest = &rest[1..];
    }
    path.extend(rest.iter().cloned());
    Some(path)
}

fn child_of(module: &ModPath, name: &str) -> ModPath {
    let mut child = module.clone();
    child.push(name.to_string());
    child
}

/// The attribute at `i` (`#[...]`, or `#![...]` inside a module), as its bracketed tokens.
fn attribute_at(tokens: &[TokenTree], i: usize) -> Option<&proc_macro2::Group> {
    if !is_punct(&tokens[i], '#') {
        return None;
    }
    let bracket = if tokens.get(i + 1).is_some_and(|t| is_punct(t, '!')) {
        i + 2
    } else {
        i + 1
    };
    match tokens.get(bracket) {
        Some(TokenTree::Group(g)) if g.delimiter() == Delimiter::Bracket => Some(g),
        _ => None,
    }
}

/// Notes `cfg(test)` (also inside `cfg(all(...))`) and `path = "..."`.
fn read_attribute(attribute: &proc_macro2::Group, attributes: &mut Attributes) {
    let tokens: Vec<TokenTree> = attribute.stream().into_iter().collect();
    match tokens.as_slice() {
        [TokenTree::Ident(cfg), TokenTree::Group(condition)] if cfg == "cfg" => {
            attributes.test_only |= condition_requires_test(&condition.stream());
        }
        [
            TokenTree::Ident(path),
            TokenTree::Punct(eq),
            TokenTree::Literal(value),
        ] if path == "path" && eq.as_char() == '=' => {
            attributes.path = Some(value.to_string().trim_matches('"').to_string());
        }
        _ => {}
    }
}

/// Whether a `cfg` condition holds only in tests: `test`, or `all(..., test, ...)`.
fn condition_requires_test(condition: &TokenStream) -> bool {
    let tokens: Vec<TokenTree> = condition.clone().into_iter().collect();
    match tokens.as_slice() {
        [TokenTree::Ident(test)] => test == "test",
        [TokenTree::Ident(all), TokenTree::Group(inner)] if all == "all" => inner
            .stream()
            .into_iter()
            .collect::<Vec<_>>()
            .split(|t| is_punct(t, ','))
            .any(|part| condition_requires_test(&part.iter().cloned().collect())),
        _ => false,
    }
}

/// Whether a file or inline module body opens with `#![cfg(test)]` among its inner attributes.
fn starts_test_only(tokens: &[TokenTree]) -> bool {
    let mut attributes = Attributes::default();
    let mut i = 0;
    while i + 2 < tokens.len() && is_punct(&tokens[i + 1], '!') {
        let Some(attribute) = attribute_at(tokens, i) else {
            break;
        };
        read_attribute(attribute, &mut attributes);
        i += 3;
    }
    attributes.test_only
}

/// The index after the item starting at `start`: after its `;`, or after its body in braces
/// (a `fn`, `impl`, `mod`, `struct`); `use`, `let`, `const`, `static` and `type` items end
/// at their `;` whatever braces they hold.
fn item_end(tokens: &[TokenTree], start: usize) -> usize {
    let keywords: Vec<String> = tokens[start..]
        .iter()
        .filter(|t| matches!(t, TokenTree::Ident(_)))
        .take(3)
        .map(|t| t.to_string())
        .collect();
    let first = keywords
        .iter()
        .find(|k| *k != "pub")
        .map(String::as_str)
        .unwrap_or("");
    let is_fn = keywords.iter().any(|k| k == "fn");
    let semicolon_only = matches!(first, "use" | "let" | "static" | "type") || (first == "const" && !is_fn);
    for (j, token) in tokens.iter().enumerate().skip(start) {
        match token {
            TokenTree::Punct(p) if p.as_char() == ';' => return j + 1,
            TokenTree::Group(g) if g.delimiter() == Delimiter::Brace && !semicolon_only => return j + 1,
            _ => {}
        }
    }
    tokens.len()
}

/// Whether `::` is at `i`.
fn path_separator_at(tokens: &[TokenTree], i: usize) -> bool {
    matches!((tokens.get(i), tokens.get(i + 1)),
        (Some(TokenTree::Punct(a)), Some(TokenTree::Punct(b)))
            if a.as_char() == ':' && a.spacing() == Spacing::Joint && b.as_char() == ':')
}

fn is_punct(token: &TokenTree, c: char) -> bool {
    matches!(token, TokenTree::Punct(p) if p.as_char() == c)
}

fn is_group(token: Option<&TokenTree>, delimiter: Delimiter) -> bool {
    matches!(token, Some(TokenTree::Group(g)) if g.delimiter() == delimiter)
}

fn is_ident(token: &TokenTree, name: &str) -> bool {
    matches!(token, TokenTree::Ident(id) if id == name)
}

fn line_of(token: &TokenTree) -> usize {
    token.span().start().line
}

// ---------------------------------------------------------------------------------------------
// Graphs of modules and their cycles.

/// Nodes and, for each edge, the references that make it.
type Graph = BTreeMap<String, BTreeMap<String, Vec<Reference>>>;

/// The graph whose nodes `node` names (`None`: the reference's end is no node); references
/// within one node are no edge.
fn graph(
    references: &[Reference],
    node: impl Fn(&ModPath, &Path) -> Option<String>,
    from_file_module: impl Fn(&Reference) -> Option<String>,
) -> Graph {
    let mut graph = Graph::new();
    for reference in references {
        let (Some(from), Some(to)) = (
            from_file_module(reference),
            node(&reference.to, &reference.to_file),
        ) else {
            continue;
        };
        if from != to {
            graph
                .entry(from)
                .or_default()
                .entry(to)
                .or_default()
                .push(reference.clone());
        }
    }
    graph
}

/// The children of module `parent` (of the crate root: its top-level modules), each with
/// everything under it as one node: a folder with its mod.rs (or x.rs beside it) is one
/// node; `parent`'s own file, which declares them all, is none.
fn children_graph(scan: &CrateScan, parent: &[String]) -> Graph {
    let child = |module: &ModPath| {
        (module.len() > parent.len() && module.starts_with(parent))
            .then(|| module[..=parent.len()].join("::"))
    };
    graph(&scan.references, |to, _| child(to), |r| child(&r.from))
}

/// The modules of a crate that have child modules (the root included).
fn parents(scan: &CrateScan) -> BTreeSet<ModPath> {
    scan.modules
        .keys()
        .filter_map(|module| module.split_last().map(|(_, parent)| parent.to_vec()))
        .collect()
}

/// Each non-test file under `dir` is a node, a folder's files each their own.
fn file_graph(scan: &CrateScan, dir: &str) -> Graph {
    let node = |file: &Path| file.starts_with(dir).then(|| file.display().to_string());
    graph(&scan.references, |_, to_file| node(to_file), |r| node(&r.file))
}

/// The strongly connected components of more than one node (Tarjan's algorithm): each holds
/// at least one cycle, and every cycle lies within one.
fn cycles(graph: &Graph) -> Vec<Vec<String>> {
    struct Tarjan<'g> {
        graph: &'g Graph,
        index: BTreeMap<&'g str, usize>,
        low: BTreeMap<&'g str, usize>,
        stack: Vec<&'g str>,
        on_stack: BTreeSet<&'g str>,
        components: Vec<Vec<String>>,
    }
    impl<'g> Tarjan<'g> {
        fn visit(&mut self, node: &'g str) {
            let n = self.index.len();
            self.index.insert(node, n);
            self.low.insert(node, n);
            self.stack.push(node);
            self.on_stack.insert(node);
            let graph = self.graph;
            for next in graph.get(node).into_iter().flat_map(|edges| edges.keys()) {
                if !self.index.contains_key(next.as_str()) {
                    self.visit(next);
                    let low = self.low[node].min(self.low[next.as_str()]);
                    self.low.insert(node, low);
                } else if self.on_stack.contains(next.as_str()) {
                    let low = self.low[node].min(self.index[next.as_str()]);
                    self.low.insert(node, low);
                }
            }
            if self.low[node] == self.index[node] {
                let mut component = Vec::new();
                while let Some(member) = self.stack.pop() {
                    self.on_stack.remove(member);
                    component.push(member.to_string());
                    if member == node {
                        break;
                    }
                }
                if component.len() > 1 {
                    component.sort();
                    self.components.push(component);
                }
            }
        }
    }
    let mut tarjan = Tarjan {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        components: Vec::new(),
    };
    for node in graph.keys() {
        if !tarjan.index.contains_key(node.as_str()) {
            tarjan.visit(node);
        }
    }
    tarjan.components.sort();
    tarjan.components
}

/// Each cycle with every edge inside it and where its references are, so that a reader sees
/// which import to move (the edge with the fewest references is usually the one to break).
fn describe_cycles(what: &str, graph: &Graph) -> String {
    let mut text = String::new();
    for component in cycles(graph) {
        text += &format!("import cycle {what} among {}:\n", component.join(", "));
        for from in &component {
            for (to, references) in &graph[from] {
                if component.contains(to) {
                    text += &format!("  {from} -> {to}: {}\n", describe_references(references));
                }
            }
        }
    }
    text
}

/// How many references, and where the first few are.
fn describe_references(references: &[Reference]) -> String {
    let shown: Vec<String> = references.iter().take(3).map(Reference::location).collect();
    let more = references.len().saturating_sub(shown.len());
    let more = if more > 0 {
        format!(" and {more} more")
    } else {
        String::new()
    };
    format!("{} reference(s): {}{more}", references.len(), shown.join(", "))
}

// ---------------------------------------------------------------------------------------------
// The checks on the workspace.

/// Every crate's scan, read once for all the tests of this file.
fn workspace() -> &'static [CrateScan] {
    static SCANS: OnceLock<Vec<CrateScan>> = OnceLock::new();
    SCANS.get_or_init(|| {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let read = |path: &Path| std::fs::read_to_string(root.join(path)).ok();
        CRATE_ROOTS
            .iter()
            .map(|file| scan_crate(Path::new(file), &read))
            .collect()
    })
}

fn controller() -> &'static CrateScan {
    workspace()
        .iter()
        .find(|scan| scan.root.starts_with("controller"))
        .expect("the controller crate is scanned")
}

#[test]
fn no_import_cycle_between_the_children_of_any_module_of_any_crate() {
    let mut found = String::new();
    for scan in workspace() {
        let crate_dir = scan.root.parent().unwrap_or(Path::new("")).display().to_string();
        for parent in parents(scan) {
            let within = match parent.is_empty() {
                true => String::new(),
                false => format!(" under {}", parent.join("::")),
            };
            found += &describe_cycles(
                &format!("between the modules of {crate_dir}{within}"),
                &children_graph(scan, &parent),
            );
        }
    }
    assert!(found.is_empty(), "{found}");
}

#[test]
fn no_import_cycle_between_the_files_of_the_lifecycle_machine() {
    let found = describe_cycles(
        "in controller/src/lifecycle",
        &file_graph(controller(), "controller/src/lifecycle"),
    );
    assert!(found.is_empty(), "{found}");
}

/// References from the builders, the metrics or the shell up into a kind or the machine.
fn upward_references(scan: &CrateScan) -> Vec<String> {
    let top_level_in =
        |module: &ModPath, set: &[&str]| module.first().is_some_and(|m| set.contains(&m.as_str()));
    scan.references
        .iter()
        .filter(|r| top_level_in(&r.from, &BELOW_THE_KINDS) && top_level_in(&r.to, &KINDS_AND_THE_MACHINE))
        .map(|r| format!("  {} -> {}: {}", r.from[0], r.to[0], r.location()))
        .collect()
}

#[test]
fn builders_metrics_and_the_reconcile_shell_import_no_kind_and_not_the_machine() {
    let upward = upward_references(controller());
    assert!(
        upward.is_empty(),
        "the object builders, the metrics and the reconcile shell must not import a kind or the lifecycle \
         machine (what they need belongs at the crate's root or in the api crate):\n{}",
        upward.join("\n")
    );
}

/// A scan that found nothing would pass every check above.
#[test]
fn the_scan_finds_the_controller_s_modules_and_imports() {
    let scan = controller();
    let edges: BTreeSet<(&Path, &Path)> = scan
        .references
        .iter()
        .filter(|r| r.file != r.to_file)
        .map(|r| (r.file.as_path(), r.to_file.as_path()))
        .collect();
    assert!(
        edges.len() > 300,
        "only {} imports between the controller's files",
        edges.len()
    );
    assert!(
        scan.modules.len() > 80,
        "only {} modules in the controller",
        scan.modules.len()
    );
    let machine = ["lifecycle".to_string(), "machine".to_string()];
    assert_eq!(
        scan.modules.get(machine.as_slice()),
        Some(&PathBuf::from("controller/src/lifecycle/machine.rs"))
    );
}

// ---------------------------------------------------------------------------------------------
// The scanner on small crates in memory.

mod scanner {
    use super::*;

    /// Scans a crate of the given files (paths under `src/`), rooted at `src/lib.rs`.
    fn scan(files: &[(&str, &str)]) -> CrateScan {
        let files: BTreeMap<PathBuf, String> = files
            .iter()
            .map(|(path, text)| (Path::new("src").join(path), text.to_string()))
            .collect();
        scan_crate(Path::new("src/lib.rs"), &|path| files.get(path).cloned())
    }

    /// Each reference as "from-file:line -> to-file".
    fn references(scan: &CrateScan) -> Vec<String> {
        scan.references
            .iter()
            .map(|r| format!("{}:{} -> {}", r.file.display(), r.line, r.to_file.display()))
            .collect()
    }

    #[test]
    fn a_use_group_names_each_module_it_imports_from() {
        let scan = scan(&[
            ("lib.rs", "mod a;\nmod b;\nmod c;"),
            ("a.rs", "use crate::{\n    b::{self, X},\n    c::Y,\n};"),
            ("b.rs", ""),
            ("c.rs", ""),
        ]);
        let from_a: Vec<String> = references(&scan)
            .into_iter()
            .filter(|r| r.starts_with("src/a.rs"))
            .collect();
        assert_eq!(
            from_a,
            [
                "src/a.rs:2 -> src/b.rs",
                "src/a.rs:2 -> src/b.rs",
                "src/a.rs:3 -> src/c.rs"
            ]
        );
    }

    #[test]
    fn a_glob_and_super_name_the_parent() {
        let scan = scan(&[
            ("lib.rs", "mod a;"),
            ("a.rs", "mod b;"),
            ("a/b.rs", "use super::*;"),
        ]);
        assert!(references(&scan).contains(&"src/a/b.rs:1 -> src/a.rs".to_string()));
    }

    #[test]
    fn paths_in_code_through_the_crate_a_child_an_alias_or_a_macro_name_the_deepest_module() {
        let scan = scan(&[
            ("lib.rs", "mod a;\nmod b;"),
            (
                "a.rs",
                "mod kid;\nuse crate::b;\nfn f() {\n    crate::b::g();\n    kid::h();\n    b::deep::i();\n}\n\
                 macro_rules! m {\n    () => { $crate::b::g() };\n}",
            ),
            ("a/kid.rs", ""),
            ("b/mod.rs", "pub mod deep;"),
            ("b/deep.rs", ""),
        ]);
        let from_a = references(&scan);
        for expected in [
            "src/a.rs:4 -> src/b/mod.rs",
            "src/a.rs:5 -> src/a/kid.rs",
            "src/a.rs:6 -> src/b/deep.rs",
            "src/a.rs:9 -> src/b/mod.rs",
        ] {
            assert!(
                from_a.contains(&expected.to_string()),
                "{expected} not in {from_a:?}"
            );
        }
    }

    #[test]
    fn test_code_comments_and_doc_comments_are_not_read() {
        let scan = scan(&[
            ("lib.rs", "mod a;\nmod b;\n#[cfg(test)]\nmod never_read;"),
            (
                "a.rs",
                "//! See crate::b::X.\n/// Calls crate::b::f.\nfn f() {} // crate::b::g\n\
                 #[cfg(test)]\nmod tests {\n    use crate::b::X;\n}\n\
                 #[cfg(test)]\nfn helper() { crate::b::f(); }\n",
            ),
            ("b.rs", ""),
        ]);
        let from_a: Vec<String> = references(&scan)
            .into_iter()
            .filter(|r| r.starts_with("src/a.rs"))
            .collect();
        assert!(from_a.is_empty(), "{from_a:?}");
        assert!(!scan.modules.contains_key(&vec!["never_read".to_string()]));
    }

    #[test]
    fn a_path_attribute_names_the_file_of_a_module() {
        let scan = scan(&[
            ("lib.rs", "mod a;"),
            ("a.rs", "#[path = \"elsewhere.rs\"]\nmod b;"),
            ("elsewhere.rs", ""),
        ]);
        assert_eq!(
            scan.modules.get(&vec!["a".to_string(), "b".to_string()]),
            Some(&PathBuf::from("src/elsewhere.rs"))
        );
    }

    #[test]
    fn a_cycle_is_reported_with_a_reference_of_each_edge() {
        let scan = scan(&[
            ("lib.rs", "mod a;\nmod b;\nmod c;"),
            ("a.rs", "use crate::b::X;"),
            ("b.rs", "pub struct X;\n\npub fn f() {\n    crate::a::g();\n}"),
            ("c.rs", "use crate::a::X;"),
        ]);
        let report = describe_cycles("in the test crate", &children_graph(&scan, &[]));
        assert_eq!(
            report,
            "import cycle in the test crate among a, b:\n  \
             a -> b: 1 reference(s): src/a.rs:1 `crate::b::X`\n  \
             b -> a: 1 reference(s): src/b.rs:4 `crate::a::g`\n"
        );
    }

    #[test]
    fn a_cycle_between_two_folders_of_a_folder_is_found_there_and_not_above() {
        // k/a/ and k/b/ import each other through files below them; k as a whole imports
        // nothing outside.
        let scan = scan(&[
            ("lib.rs", "mod k;\nmod other;"),
            ("k/mod.rs", "mod a;\nmod b;"),
            ("k/a/mod.rs", "mod deep;"),
            ("k/a/deep.rs", "use crate::k::b::Y;\npub struct X;"),
            ("k/b/mod.rs", "use super::a::deep::X;\npub struct Y;"),
            ("other.rs", "use crate::k::a::deep::X;"),
        ]);
        assert_eq!(
            parents(&scan),
            BTreeSet::from([
                vec![],
                vec!["k".to_string()],
                vec!["k".to_string(), "a".to_string()]
            ])
        );
        assert!(cycles(&children_graph(&scan, &[])).is_empty());
        assert_eq!(
            cycles(&children_graph(&scan, &["k".to_string()])),
            [vec!["k::a".to_string(), "k::b".to_string()]]
        );
    }

    #[test]
    fn an_import_from_the_shell_into_a_kind_is_upward() {
        let scan = scan(&[
            ("lib.rs", "mod runtime;\nmod deployment;\nmod plan;"),
            (
                "runtime/mod.rs",
                "use crate::plan::Plan;\n\nfn f() {\n    crate::deployment::decide();\n}",
            ),
            ("deployment.rs", "use crate::plan::Plan;"),
            ("plan.rs", ""),
        ]);
        assert_eq!(
            upward_references(&scan),
            ["  runtime -> deployment: src/runtime/mod.rs:4 `crate::deployment::decide`"]
        );
    }

    #[test]
    fn a_parent_that_re_exports_a_child_which_imports_it_is_a_cycle_and_a_declaration_alone_is_not() {
        let declared = scan(&[
            ("lib.rs", "mod m;"),
            ("m/mod.rs", "mod x;\npub struct Z;"),
            ("m/x.rs", "use super::Z;"),
        ]);
        assert!(cycles(&file_graph(&declared, "src/m")).is_empty());

        let scan = scan(&[
            ("lib.rs", "mod m;"),
            ("m/mod.rs", "mod x;\npub use x::Y;"),
            ("m/x.rs", "use super::Z;"),
        ]);
        let report = describe_cycles("in m", &file_graph(&scan, "src/m"));
        assert!(
            report.contains("src/m/mod.rs -> src/m/x.rs: 1 reference(s): src/m/mod.rs:2 `x::Y`"),
            "{report}"
        );
        assert!(
            report.contains("src/m/x.rs -> src/m/mod.rs: 1 reference(s): src/m/x.rs:1 `super::Z`"),
            "{report}"
        );
    }
}
