//! `cargo xtask stack`: a static bound of the client firmware's stack on the paths the QEMU
//! run does not take (a key update's worst case, a HelloRetryRequest), from the image's
//! machine code: each function's frame (`push`/`stmdb sp!`/`vpush`/`str rX, [sp, #-n]!`
//! and `sub sp`) and its direct calls (`bl`, and branches to another function's start: tail
//! calls), from `llvm-objdump -d`. The deepest chain below a root, plus the deepest chain
//! from the entry point down to the root, is the root's bound from the top of the stack
//! (what the firmware's stack painting measures).
//!
//! A lower bound where the code calls through a pointer (`blx rN`: trait objects, function
//! pointers) or recurses: both are counted and named in the output.
//!
//! RISC-V images (riscv32imc) are read the same way: frames from `addi sp, sp, -n`, calls
//! from `jal`/`jalr ... <sym>` (the machine outliner's calls link through `t0`), tail calls
//! from `j`/`jr ... <sym>`; a register jump other than a return (`jr aN`: a jump table or a
//! call through a pointer) makes the bound a lower bound.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{anyhow, bail, Context, Result};

/// Arguments of `cargo xtask stack`.
#[derive(clap::Args, Debug, Default)]
pub struct StackArgs {
    /// The firmware ELF (default: build the QEMU firmware, RPK Ed25519).
    #[arg(long)]
    pub elf: Option<PathBuf>,
    /// The target of the QEMU firmware built when no `--elf` is given (default: Cortex-M4).
    #[arg(long, value_enum)]
    pub target: Option<crate::qemu::Target>,
    /// A root function: a substring of its demangled path (repeatable; default: the key
    /// update and HelloRetryRequest paths, and the whole program).
    #[arg(long = "root")]
    pub roots: Vec<String>,
    /// Fail if a root's bound from the top of the stack exceeds this many bytes.
    #[arg(long)]
    pub limit: Option<u64>,
}

/// The roots `cargo xtask stack` and `cargo xtask qemu` bound by default: the paths the
/// QEMU run does not take, or takes in their cheap case only.
pub const DEFAULT_ROOTS: &[&str] = &[
    // RFC 9001 §6: a key update the peer initiated (opened with the next receive key, the
    // send key derived).
    "OneRttKeys<P>>>::open_other_phase",
    // RFC 9001 §6.3: the next receive key, derived ahead on the first 1-RTT packet of each
    // phase (the QEMU run takes it once).
    "OneRttKeys<P>>>::derive_next_rx",
    // RFC 9001 §6.1: a key update this side initiates.
    "OneRttKeys<P>>>::initiate",
    // RFC 8446 §4.1.4: a HelloRetryRequest (its checks inlined into the ServerHello's
    // handler, `server_hello`, and `server_hello_or_retry` above it) and the second
    // ClientHello.
    "Client<P>::server_hello",
    // The ClientHello: the first (connection constructor) and, after a HelloRetryRequest,
    // the second (from the handshake's receive path, once the HelloRetryRequest's handlers
    // returned).
    "Client<P>::emit_client_hello",
];

/// The entry point of the firmware image (cortex-m-rt's `Reset`, which llvm-objdump labels
/// by the section symbol at its address; riscv-rt's `_start_rust`, entered once the
/// assembly start-up has set the stack pointer).
const ENTRY: &[&str] = &["Reset", "__stext", "_start_rust"];

/// One function of the image.
#[derive(Debug, Default)]
struct Function {
    name: String,
    /// Bytes its prologue takes (pushes and `sub sp`).
    frame: u64,
    /// Addresses it calls directly (including tail calls).
    calls: BTreeSet<u64>,
    /// It calls through a register (indirect call: the bound is a lower bound).
    indirect: bool,
    /// It moves `sp` by a register amount (dynamic allocation: the frame is a lower bound).
    dynamic: bool,
}

/// The call graph of an image.
pub struct Graph {
    functions: HashMap<u64, Function>,
}

/// The bound of one root.
pub struct Bound {
    /// The root function's name.
    pub root: String,
    /// Bytes from the top of the stack down to the root's frame (the entry's deepest chain
    /// that reaches the root), 0 if the entry never reaches it directly.
    pub above: u64,
    /// Bytes of the root's frame and its deepest chain below.
    pub below: u64,
    /// The chain below the root: (function, frame bytes).
    pub chain: Vec<(String, u64)>,
    /// Functions on the chain that call through a pointer or recurse.
    pub lower_bound_because: Vec<String>,
}

impl Bound {
    /// The bound from the top of the stack.
    pub fn total(&self) -> u64 {
        self.above + self.below
    }
}

/// Registers in a `{r4, r5, lr}` / `{d8-d9}` list, with the bytes each takes.
fn register_bytes(list: &str) -> u64 {
    let inner = list.split('{').nth(1).and_then(|s| s.split('}').next()).unwrap_or("");
    inner
        .split(',')
        .map(str::trim)
        .filter(|r| !r.is_empty())
        .map(|r| {
            let width = if r.starts_with('d') { 8 } else { 4 };
            let count = match r.split_once('-') {
                Some((a, b)) => {
                    let n = |s: &str| s.trim_start_matches(char::is_alphabetic).parse::<u64>();
                    match (n(a), n(b)) {
                        (Ok(a), Ok(b)) if b >= a => b - a + 1,
                        _ => 1,
                    }
                }
                None => 1,
            };
            width * count
        })
        .sum()
}

/// An immediate `#n` / `#0xn` operand.
fn immediate(s: &str) -> Option<u64> {
    let s = s.trim().trim_start_matches('#');
    match s.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16).ok(),
        None => s.parse().ok(),
    }
}

/// The target address of a branch operand (`0x1234 <sym>` or `1234 <sym>`).
fn branch_target(ops: &str) -> Option<u64> {
    let addr = ops.split('<').next()?.trim();
    let addr = addr.rsplit([' ', ',']).next()?.trim_start_matches("0x");
    u64::from_str_radix(addr, 16).ok()
}

/// The symbol a RISC-V jump lands on when it is a symbol's start (`-0x1e0(ra) <name>`, not
/// `<name+0x10>`): `jalr` operands are PC-relative, so the name is what resolves them.
fn target_symbol(ops: &str) -> Option<&str> {
    let sym = ops.split_once('<')?.1.strip_suffix('>')?;
    (!sym.contains('+')).then_some(sym)
}

/// Where a branch goes: an address, or (RISC-V) a symbol resolved once every label is known.
enum Target {
    Addr(u64),
    Symbol(String),
}

impl Graph {
    /// Disassembles `elf` with llvm-objdump.
    pub fn of_elf(elf: &Path) -> Result<Self> {
        let objdump = objdump().ok_or_else(|| {
            anyhow!("llvm-objdump not found (rustup component llvm-tools, or Debian package llvm)")
        })?;
        let out = Command::new(&objdump)
            .args(["-d", "--no-show-raw-insn"])
            .arg(elf)
            .output()
            .with_context(|| format!("{objdump} -d {}", elf.display()))?;
        if !out.status.success() {
            bail!("{objdump} failed: {}", String::from_utf8_lossy(&out.stderr));
        }
        Ok(Self::parse(&String::from_utf8_lossy(&out.stdout)))
    }

    /// Builds the graph from `llvm-objdump -d --no-show-raw-insn` output (Thumb-2).
    pub fn parse(disassembly: &str) -> Self {
        let mut functions: HashMap<u64, Function> = HashMap::new();
        // Branch targets per function, resolved to calls once every start is known.
        let mut branches: Vec<(u64, Target, bool)> = Vec::new();
        // Raw label names and their addresses (RISC-V jumps name their target).
        let mut labels: HashMap<String, u64> = HashMap::new();
        let mut current: Option<u64> = None;
        for line in disassembly.lines() {
            // A label: `00001234 <name>:`. Mapping symbols (`$t`, `$d`) and local labels
            // (`.Lpcrel_hi0`: RISC-V's PC-relative address pairs) do not start a function:
            // the code around them is one.
            if let Some((addr, rest)) = line.split_once(" <") {
                if let (Ok(addr), Some(name)) =
                    (u64::from_str_radix(addr.trim(), 16), rest.strip_suffix(">:"))
                {
                    if !name.starts_with('$') && !name.starts_with(".L") {
                        labels.insert(name.to_owned(), addr);
                        // `{:#}`: without the hash.
                        let name = format!("{:#}", rustc_demangle::demangle(name));
                        functions.insert(addr, Function { name, ..Function::default() });
                        current = Some(addr);
                    }
                    continue;
                }
            }
            let Some(f) = current.and_then(|a| functions.get_mut(&a)) else { continue };
            // `     4c2:      \tsub\tsp, #76    @ comment`
            let Some((_, insn)) = line.split_once(':') else { continue };
            let insn = insn.split(" @ ").next().unwrap_or("").trim();
            let (mnemonic, ops) = insn.split_once(char::is_whitespace).unwrap_or((insn, ""));
            let ops = ops.trim();
            match mnemonic {
                "push" | "push.w" | "vpush" => f.frame += register_bytes(ops),
                "stmdb" | "stmdb.w" | "vstmdb" if ops.starts_with("sp!") => {
                    f.frame += register_bytes(ops);
                }
                "str" | "str.w" | "vstr" if ops.ends_with("]!") && ops.contains("[sp, #-") => {
                    let n =
                        ops.split("#-").nth(1).and_then(|s| immediate(s.trim_end_matches("]!")));
                    f.frame += n.unwrap_or(0);
                }
                "sub" | "sub.w" | "subw" if ops.starts_with("sp,") => {
                    match ops.rsplit(',').next().and_then(immediate) {
                        Some(n) if ops.contains('#') => f.frame += n,
                        _ => f.dynamic = true,
                    }
                }
                // `bx lr` returns; any other register branch is a call through a pointer.
                "blx" | "bx" if !ops.contains('<') && ops != "lr" => f.indirect = true,
                "bx" if ops == "lr" => {}
                "bl" | "blx" => {
                    if let (Some(t), Some(a)) = (branch_target(ops), current) {
                        branches.push((a, Target::Addr(t), true));
                    }
                }
                m if m.starts_with('b') && ops.contains('<') && !m.starts_with("bic") => {
                    // A branch: a tail call when it lands on another function's start.
                    if let (Some(t), Some(a)) = (branch_target(ops), current) {
                        branches.push((a, Target::Addr(t), false));
                    }
                }
                // RISC-V.
                "addi" if ops.starts_with("sp, sp, -") => {
                    f.frame += immediate(ops.trim_start_matches("sp, sp, -")).unwrap_or(0);
                }
                // A call (`jal`, `jalr` linking `ra`, or `t0` for outlined code) or a tail
                // call / jump (`j`, `jr`) to a symbol's start.
                "jal" | "jalr" | "j" | "jr" if ops.contains('<') => {
                    if let (Some(t), Some(a)) = (target_symbol(ops), current) {
                        let call = matches!(mnemonic, "jal" | "jalr");
                        branches.push((a, Target::Symbol(t.to_owned()), call));
                    }
                }
                // Returns: `ret`, and `jr t0` from outlined code.
                "jr" if ops == "t0" || ops == "ra" => {}
                // Through a register: a call through a pointer, or a jump table.
                "jalr" | "jr" => f.indirect = true,
                _ => {}
            }
        }
        for (from, to, call) in branches {
            let to = match to {
                Target::Addr(a) => a,
                Target::Symbol(name) => match labels.get(&name) {
                    Some(a) => *a,
                    None => continue,
                },
            };
            if to != from && (call || functions.contains_key(&to)) {
                if let Some(f) = functions.get_mut(&from) {
                    f.calls.insert(to);
                }
            }
        }
        Self { functions }
    }

    /// The functions whose name contains `pattern`.
    fn find(&self, pattern: &str) -> Vec<u64> {
        let mut found: Vec<u64> = self
            .functions
            .iter()
            .filter(|(_, f)| f.name.contains(pattern))
            .map(|(a, _)| *a)
            .collect();
        found.sort_unstable();
        found
    }

    /// The deepest chain below `addr` (its frame included), memoized; recursion is cut
    /// (and flagged) where a function calls one already on the chain.
    fn below(
        &self,
        addr: u64,
        memo: &mut HashMap<u64, (u64, Option<u64>)>,
        on: &mut Vec<u64>,
        cut: &mut BTreeSet<u64>,
    ) -> u64 {
        if let Some((d, _)) = memo.get(&addr) {
            return *d;
        }
        let Some(f) = self.functions.get(&addr) else { return 0 };
        on.push(addr);
        let mut best = (0, None);
        for &c in &f.calls {
            if on.contains(&c) {
                cut.insert(addr);
                continue;
            }
            let d = self.below(c, memo, on, cut);
            if d > best.0 {
                best = (d, Some(c));
            }
        }
        on.pop();
        let depth = f.frame + best.0;
        memo.insert(addr, (depth, best.1));
        depth
    }

    /// The deepest chain from `from` down to `to`, excluding `to`'s own frame; `None` if
    /// `to` is not reachable.
    fn above(
        &self,
        from: u64,
        to: u64,
        memo: &mut HashMap<u64, Option<u64>>,
        on: &mut Vec<u64>,
    ) -> Option<u64> {
        if from == to {
            return Some(0);
        }
        if let Some(d) = memo.get(&from) {
            return *d;
        }
        let f = self.functions.get(&from)?;
        on.push(from);
        let mut best = None;
        for &c in &f.calls {
            if on.contains(&c) {
                continue;
            }
            if let Some(d) = self.above(c, to, memo, on) {
                best = Some(best.map_or(d, |b: u64| b.max(d)));
            }
        }
        on.pop();
        let d = best.map(|b| b + f.frame);
        memo.insert(from, d);
        d
    }

    /// The bound of every function matching `pattern`.
    pub fn bounds(&self, pattern: &str) -> Vec<Bound> {
        let entry = self.entry();
        self.find(pattern)
            .into_iter()
            .map(|root| {
                let (mut memo, mut cut) = (HashMap::new(), BTreeSet::new());
                let below = self.below(root, &mut memo, &mut Vec::new(), &mut cut);
                let above = entry
                    .and_then(|e| self.above(e, root, &mut HashMap::new(), &mut Vec::new()))
                    .unwrap_or(0);
                let mut chain = Vec::new();
                let mut next = Some(root);
                let mut lower = Vec::new();
                while let Some(a) = next {
                    let f = &self.functions[&a];
                    chain.push((f.name.clone(), f.frame));
                    if f.indirect || f.dynamic || cut.contains(&a) {
                        lower.push(f.name.clone());
                    }
                    next = memo.get(&a).and_then(|(_, n)| *n);
                }
                Bound {
                    root: self.functions[&root].name.clone(),
                    above,
                    below,
                    chain,
                    lower_bound_because: lower,
                }
            })
            .collect()
    }

    /// The entry point's address.
    fn entry(&self) -> Option<u64> {
        let mut entries = self.functions.iter().filter(|(_, f)| ENTRY.contains(&f.name.as_str()));
        entries.next().map(|(a, _)| *a)
    }

    /// The bound of the whole program: the entry point's deepest chain.
    pub fn program(&self) -> Option<Bound> {
        let name = &self.functions.get(&self.entry()?)?.name;
        self.bounds(name).into_iter().find(|b| b.root == *name)
    }
}

/// Shortens a demangled path for printing: the last two segments.
fn short(name: &str) -> String {
    let segments: Vec<&str> = name.split("::").collect();
    let n = segments.len();
    if n <= 2 {
        name.to_owned()
    } else {
        segments[n - 2..].join("::")
    }
}

/// Prints `bounds` (one root each) and returns the lines over `limit`.
pub fn print(bounds: &[Bound], limit: Option<u64>) -> Vec<String> {
    let mut over = Vec::new();
    for b in bounds {
        println!(
            "  {}: {} B from the top ({} B down to it, {} B from it)",
            short(&b.root),
            b.total(),
            b.above,
            b.below
        );
        let chain: Vec<String> = b.chain.iter().map(|(n, f)| format!("{} {f}", short(n))).collect();
        println!("    chain: {}", chain.join(" -> "));
        if !b.lower_bound_because.is_empty() {
            let names: Vec<String> = b.lower_bound_because.iter().map(|n| short(n)).collect();
            println!(
                "    a lower bound: indirect calls, recursion or dynamic frames in {}",
                names.join(", ")
            );
        }
        if let Some(l) = limit.filter(|l| b.total() > *l) {
            over.push(format!("{}: static stack bound {} B > {l} B", short(&b.root), b.total()));
        }
    }
    over
}

/// `llvm-objdump`: the pinned toolchain's (`llvm-tools` in rust-toolchain.toml, so every
/// machine that builds the firmware has it), else one on the `PATH` (Debian package llvm).
fn objdump() -> Option<String> {
    let sysroot = Command::new("rustc").args(["--print", "sysroot"]).output().ok()?;
    let host = Command::new("rustc").arg("-vV").output().ok()?;
    let host = String::from_utf8_lossy(&host.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("host: ").map(str::to_owned));
    let bundled = host.map(|h| {
        format!(
            "{}/lib/rustlib/{h}/bin/llvm-objdump",
            String::from_utf8_lossy(&sysroot.stdout).trim()
        )
    });
    bundled
        .into_iter()
        .chain(["llvm-objdump".to_owned()])
        .find(|p| crate::util::probe(Command::new(p).arg("--version")))
}

/// The default roots' bounds in `elf` and the whole program's (the entry's deepest chain, so
/// every path is under `limit`, not only the named ones), printed; returns the lines over
/// `limit`. Fails without llvm-objdump (the toolchain's `llvm-tools` component provides it).
pub fn check_defaults(elf: &Path, limit: Option<u64>) -> Result<Vec<String>> {
    let graph = Graph::of_elf(elf)?;
    println!();
    println!(
        "== static stack bounds (frames from llvm-objdump; direct calls only: indirect calls \
         make a bound a lower bound) =="
    );
    let mut bounds = Vec::new();
    for r in DEFAULT_ROOTS {
        let found = graph.bounds(r);
        if found.is_empty() {
            bail!("no function matches the stack root {r:?} in {}", elf.display());
        }
        bounds.extend(found);
    }
    bounds.extend(graph.program());
    Ok(print(&bounds, limit))
}

/// Entry point of `cargo xtask stack`.
pub fn run(args: &StackArgs) -> Result<()> {
    let elf = match &args.elf {
        Some(e) => e.clone(),
        None => crate::qemu::build_firmware(
            args.target.unwrap_or(crate::qemu::Target::CortexM4),
            crate::qemu::Auth::Rpk,
            false,
            true,
            false,
            false,
        )?,
    };
    let graph = Graph::of_elf(&elf)?;
    let roots: Vec<String> = if args.roots.is_empty() {
        DEFAULT_ROOTS.iter().map(|r| (*r).to_owned()).collect()
    } else {
        args.roots.clone()
    };
    println!(
        "static stack bounds of {} (frames from llvm-objdump; direct calls only: indirect \
         calls make a bound a lower bound)",
        elf.display()
    );
    let mut bounds = Vec::new();
    for r in &roots {
        let found = graph.bounds(r);
        if found.is_empty() {
            bail!("no function matches {r:?}");
        }
        bounds.extend(found);
    }
    if args.roots.is_empty() {
        bounds.extend(graph.program());
    }
    let over = print(&bounds, args.limit);
    if !over.is_empty() {
        for o in &over {
            eprintln!("over the limit: {o}");
        }
        bail!("a static stack bound is over the limit");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const DIS: &str = "\
00000100 <Reset>:
     100:      \tpush\t{r7, lr}
     102:      \tbl\t0x200 <main>
00000200 <main>:
     200:      \tpush\t{r4, r5, r6, r7, lr}
     202:      \tsub\tsp, #0x10
     204:      \tbl\t0x300 <leaf>
     208:      \tbeq.w\t0x400 <deep>
     20c:      \tbne\t0x210 <main+0x10>
     210:      \tldr\tr0, [pc, #4]           @ 0x218 <$d>
00000218 <$d>:
     218:\t00 00 00 00\t.word\t0x00000000
     21c:      \tpop\t{r4, r5, r6, r7, pc}
00000300 <leaf>:
     300:      \tsub.w\tsp, sp, #0x400
     304:      \tbx\tlr
00000400 <deep>:
     400:      \tvpush\t{d8, d9}
     404:      \tstr\tlr, [sp, #-4]!
     408:      \tsubw\tsp, sp, #2000
     40c:      \tblx\tr3
     40e:      \tbl\t0x400 <deep>
";

    const DIS_RISCV: &str = "\
800000c0 <_start_rust>:
800000c0:      \taddi\tsp, sp, -0x10
800000cc:      \tjalr\t0x24(ra) <main>
800000e4 <main>:
800000e4:      \taddi\tsp, sp, -0x20
800000e8 <.Lpcrel_hi3>:
800000e8:      \tauipc\tra, 0x0
800000ec:      \tjalr\t0x18(ra) <leaf>
800000f0:      \tjalr\tt0, 0x20(t0) <OUTLINED_FUNCTION_1>
800000f4:      \tbnez\ta0, 0x800000e8 <.Lpcrel_hi3>
800000f8:      \tj\t0x800000fc <main+0x18>
800000fc:      \tjr\t0x1c(t1) <deep>
80000100 <leaf>:
80000100:      \taddi\tsp, sp, -0x7f0
80000104:      \taddi\tsp, sp, -0x10
80000108:      \taddi\tsp, sp, 0x7f0
8000010c:      \tret
80000110 <OUTLINED_FUNCTION_1>:
80000110:      \tjr\tt0
80000118 <deep>:
80000118:      \taddi\tsp, sp, -0x30
8000011c:      \tjalr\ta1
";

    #[test]
    fn riscv_frames_calls_and_tail_calls() {
        let g = Graph::parse(DIS_RISCV);
        let main = &g.functions[&0x800000e4];
        assert_eq!(main.frame, 0x20);
        // The local label does not split `main`; its loop branch is no call.
        assert_eq!(
            main.calls.iter().copied().collect::<Vec<_>>(),
            vec![0x80000100, 0x80000110, 0x80000118]
        );
        assert!(!main.indirect);
        assert_eq!(g.functions[&0x80000100].frame, 0x800);
        assert!(!g.functions[&0x80000110].indirect);
        assert!(g.functions[&0x80000118].indirect);
        let b = g.bounds("main");
        assert_eq!((b[0].above, b[0].below), (0x10, 0x20 + 0x800));
        assert_eq!(g.program().map(|p| p.total()), Some(0x10 + 0x20 + 0x800));
    }

    #[test]
    fn frames_calls_and_tail_calls() {
        let g = Graph::parse(DIS);
        let main = &g.functions[&0x200];
        assert_eq!(main.frame, 20 + 16);
        assert_eq!(main.calls.iter().copied().collect::<Vec<_>>(), vec![0x300, 0x400]);
        assert_eq!(g.functions[&0x300].frame, 0x400);
        let deep = &g.functions[&0x400];
        assert_eq!(deep.frame, 16 + 4 + 2000);
        assert!(deep.indirect);
        let b = g.bounds("main");
        assert_eq!((b[0].above, b[0].below), (8, 36 + 2020));
        assert_eq!(b[0].chain.len(), 2);
        // `deep` recurses and calls through a register: flagged.
        assert_eq!(b[0].lower_bound_because, vec!["deep".to_owned()]);
        assert_eq!(g.program().map(|p| p.total()), Some(8 + 36 + 2020));
    }
}
