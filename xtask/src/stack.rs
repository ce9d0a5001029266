//! `cargo xtask stack`: a static bound of the client firmware's stack on the paths the QEMU
//! run does not take (a key update's worst case, a HelloRetryRequest), from the image's
//! machine code: each function's frame (`push`/`stmdb sp!`/`vpush`/`str rX, [sp, #-n]!`
//! and `sub sp`) and its direct calls (`bl`, and branches to another function's start: tail
//! calls), from `llvm-objdump -d`. The deepest chain below a root, plus the deepest chain
//! from the entry point down to the root, is the root's bound from the top of the stack
//! (what the firmware's stack painting measures).
//!
//! A lower bound where the code calls through a pointer (`blx rN`: trait objects, function
//! pointers) or recurses: both are counted and named in the output, on the deepest chains and
//! (every function reachable from the entry that calls through a pointer) below them. Jump
//! tables (`tbb`/`tbh`) stay inside their function: no lower bound. `blx rN` with rN loaded
//! from the literal pool (`ldr rN, [pc, #n]`: how -Oz calls a function used several times) is
//! a direct call to the function the pool word names.
//!
//! RISC-V images (riscv32imc) are read the same way: frames from `addi sp, sp, -n` and, for
//! large ones, `lui`/`li`/`addi tN` then `sub sp, sp, tN` (any other write to `sp` is a
//! dynamic frame); calls from `jal` (absolute target) and `jalr off(rX)` resolved from the
//! `auipc rX` before it (llvm-objdump 14 prints no symbol for them; the symbol newer ones print
//! is the fallback); tail calls from `j`/`jr`. `ret`, and `jr t0` in outlined code, return;
//! `jalr rN` is a call through a pointer; `jr rN` a jump table while the frame is allocated
//! (or loaded from a constant table), else an indirect tail call. An unresolvable PC-relative
//! jump, a jump to an unknown symbol, or an image without a single call edge is an error.

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
    /// With `--elf` the image's own header says (so the two are not accepted together).
    #[arg(long, value_enum, conflicts_with = "elf")]
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
    // RFC 9001 §6.3: the next receive key, derived ahead after the first authenticated 1-RTT
    // packet of each phase (the QEMU run takes it once).
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
    /// It branches through a jump table (`tbb`/`tbh`, RISC-V `jr aN` inside its frame): the
    /// targets are inside the function, so the bound stays exact.
    jump_table: bool,
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

/// A signed immediate: `-16`, `0x7f0`, `-0x7f0` (RISC-V operands; llvm-objdump 14 prints them
/// in decimal, newer ones in hex).
fn signed_immediate(s: &str) -> Option<i64> {
    let s = s.trim();
    let (negative, s) = match s.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, s),
    };
    let v = match s.strip_prefix("0x") {
        Some(h) => i64::from_str_radix(h, 16).ok()?,
        None => s.parse::<i64>().ok()?,
    };
    Some(if negative { -v } else { v })
}

/// The symbol (and offset into it) a RISC-V jump names: `... <name>` or `... <name+0x10>`.
fn target_symbol(ops: &str) -> Option<(&str, u64)> {
    let sym = ops.split_once('<')?.1.strip_suffix('>')?;
    match sym.rsplit_once('+') {
        Some((name, offset)) => Some((name, immediate(offset)?)),
        None => Some((sym, 0)),
    }
}

/// Where a branch goes: an address, or (RISC-V) a symbol plus offset resolved once every
/// label is known.
enum BranchTo {
    Addr(u64),
    Symbol(String, u64),
    /// (Thumb) The function address in the literal-pool word at this address.
    Pool(u64),
}

/// Thumb registers loaded from the literal pool (`ldr rN, [pc, #n] @ 0xADDR`): at -Oz LLVM
/// calls a function used several times as `blx rN` with its address there.
fn thumb_writes_first_operand(mnemonic: &str) -> bool {
    let m = mnemonic.trim_end_matches(".w").trim_end_matches(".n");
    !(m.starts_with("str")
        || m.starts_with("stm")
        || m.starts_with("vst")
        || m.starts_with("push")
        || m.starts_with("vpush")
        || m.starts_with("cmp")
        || m.starts_with("cmn")
        || m.starts_with("tst")
        || m.starts_with("teq")
        || m.starts_with("it")
        || m.starts_with('b')
        || m.starts_with("cb")
        || m.starts_with("tb"))
}

/// What the RISC-V reader knows inside the current function: registers holding a known
/// address (`auipc`, `lui`, `li`, `addi` on those), and whether the frame was just released.
#[derive(Default)]
struct RiscvState {
    known: HashMap<String, i64>,
    /// Registers holding a constant address plus an index (`add` with a known operand), and
    /// registers loaded through one (`lw`): a jump table's base and entry.
    table_base: BTreeSet<String>,
    table_entry: BTreeSet<String>,
    /// An `addi sp, sp, +n` (epilogue) ran since the last jump: a register jump here leaves
    /// the function (an indirect tail call), not a jump table.
    released: bool,
    /// The previous instruction was an unconditional jump: what follows is another block,
    /// whose frame is still allocated.
    after_jump: bool,
}

/// Stores and branches read their first operand; every other RISC-V instruction writes it.
fn riscv_writes_first_operand(mnemonic: &str) -> bool {
    !matches!(
        mnemonic,
        "sw" | "sh"
            | "sb"
            | "fsw"
            | "fsd"
            | "c.sw"
            | "c.swsp"
            | "beq"
            | "bne"
            | "blt"
            | "bge"
            | "bltu"
            | "bgeu"
            | "beqz"
            | "bnez"
            | "blez"
            | "bgez"
            | "bltz"
            | "bgtz"
            | "bgt"
            | "ble"
            | "bgtu"
            | "bleu"
            | "j"
            | "jr"
            | "jal"
            | "jalr"
            | "ret"
    )
}

/// One RISC-V instruction of function `f` (at `pc`, in function `at`).
///
/// Frames: `addi sp, sp, -n`, and large ones as `lui`/`li`/`addi tN` then `sub sp, sp, tN`
/// (or `add sp, sp, tN` with a negative tN); any other write to `sp` is dynamic. Jumps:
/// `jal`/`j` print their absolute target; `jalr`/`jr off(rX)` are resolved from the `auipc`
/// (or `lui`) that set `rX`, as llvm-objdump 14 prints no symbol for them (newer ones do: the
/// symbol is the fallback). `jr t0` returns from outlined code only; `ret` returns.
fn riscv_insn(
    f: &mut Function,
    st: &mut RiscvState,
    at: u64,
    pc: u64,
    mnemonic: &str,
    ops: &str,
    branches: &mut Vec<(u64, BranchTo, bool)>,
) -> Result<()> {
    if st.after_jump {
        st.after_jump = false;
        st.released = false;
    }
    let plain = ops.split('<').next().unwrap_or("").trim();
    let operands: Vec<&str> = plain.split(',').map(str::trim).filter(|o| !o.is_empty()).collect();
    let first = operands.first().copied().unwrap_or("");
    // The value a register holds, if known.
    let value = |st: &RiscvState, r: &str| st.known.get(r).copied();
    match mnemonic {
        "addi" if first == "sp" && operands.get(1) == Some(&"sp") => {
            match operands.get(2).and_then(|o| signed_immediate(o)) {
                Some(n) if n < 0 => f.frame += n.unsigned_abs(),
                Some(_) => st.released = true,
                None => f.dynamic = true,
            }
            return Ok(());
        }
        "sub" | "add" if first == "sp" && operands.get(1) == Some(&"sp") => {
            let v = operands.get(2).and_then(|r| value(st, r));
            match (mnemonic, v) {
                ("sub", Some(n)) if n >= 0 => f.frame += n.unsigned_abs(),
                ("add", Some(n)) if n < 0 => f.frame += n.unsigned_abs(),
                ("add", Some(_)) => st.released = true,
                _ => f.dynamic = true,
            }
            return Ok(());
        }
        _ if first == "sp" && riscv_writes_first_operand(mnemonic) => {
            f.dynamic = true;
            return Ok(());
        }
        _ => {}
    }
    // Jumps.
    let link = match (mnemonic, operands.len()) {
        ("jal", _) | ("jalr", 0 | 1) => Some("ra"),
        ("jalr", _) => Some(first),
        ("j" | "jr" | "ret", _) => None,
        _ => {
            // Track known register values; anything else forgets what it writes.
            let imm = operands.last().and_then(|o| signed_immediate(o));
            let rd = first.to_owned();
            let new = match mnemonic {
                // RISC-V: `lui`/`auipc` take a 20-bit upper immediate (32-bit wrap-around).
                "lui" => imm.map(|i| i64::from(((i as u32) << 12) as i32)),
                "auipc" => {
                    imm.map(|i| (pc as i64).wrapping_add(i64::from(((i as u32) << 12) as i32)))
                }
                "li" => imm,
                "addi" => operands
                    .get(1)
                    .and_then(|rs| value(st, rs))
                    .zip(imm)
                    .map(|(v, i)| i64::from((v as i32).wrapping_add(i as i32))),
                "mv" => operands.get(1).and_then(|rs| value(st, rs)),
                _ => None,
            };
            if riscv_writes_first_operand(mnemonic) {
                let reads_table = |set: &BTreeSet<String>| {
                    operands
                        .get(1)
                        .and_then(|o| o.split_once('('))
                        .is_some_and(|(_, r)| set.contains(r.trim_end_matches(')')))
                };
                let entry = mnemonic == "lw" && reads_table(&st.table_base);
                let base =
                    mnemonic == "add" && operands[1..].iter().any(|r| value(st, r).is_some());
                for (set, on) in [(&mut st.table_entry, entry), (&mut st.table_base, base)] {
                    if on {
                        set.insert(rd.clone());
                    } else {
                        set.remove(&rd);
                    }
                }
                match new {
                    Some(v) => st.known.insert(rd, v),
                    None => st.known.remove(&rd),
                };
            }
            return Ok(());
        }
    };
    st.after_jump = link.is_none();
    if mnemonic == "ret" {
        return Ok(());
    }
    let call = link.is_some();
    // A call clobbers the caller-saved registers (and its link register).
    let resolved_base = |st: &RiscvState| {
        let base = operands.last().copied().unwrap_or("");
        let reg = base.split_once('(').map_or(base, |(_, r)| r.trim_end_matches(')'));
        value(st, reg)
    };
    let resolved = resolved_base(st);
    if call {
        st.known.retain(|r, _| r.starts_with('s') && r != "sp");
    }
    // `jal`/`j`: an absolute target.
    if matches!(mnemonic, "jal" | "j") {
        let t = branch_target(plain)
            .ok_or_else(|| anyhow!("{pc:#x}: {mnemonic} {ops}: no target address"))?;
        branches.push((at, BranchTo::Addr(t), call));
        return Ok(());
    }
    // `jalr`/`jr`: `rX`, `off(rX)`, or `rd, off(rX)`.
    let base = operands.last().copied().unwrap_or("");
    let (offset, reg) = match base.split_once('(') {
        Some((off, reg)) => (signed_immediate(off), reg.trim_end_matches(')')),
        None => (Some(0), base),
    };
    let offset = offset.ok_or_else(|| anyhow!("{pc:#x}: {mnemonic} {ops}: bad offset"))?;
    if let Some(v) = resolved {
        branches.push((at, BranchTo::Addr(v.wrapping_add(offset) as u32 as u64), call));
        return Ok(());
    }
    if let Some((name, off)) = target_symbol(ops) {
        branches.push((at, BranchTo::Symbol(name.to_owned(), off), call));
        return Ok(());
    }
    match (mnemonic, reg) {
        // Returns.
        ("jr", "ra") if offset == 0 => {}
        ("jr", "t0") if offset == 0 && f.name.starts_with("OUTLINED_FUNCTION_") => {}
        // A PC-relative jump whose `auipc` was not seen: the call graph would miss it.
        _ if offset != 0 || reg == "ra" => {
            bail!("{pc:#x}: {mnemonic} {ops} in {}: no target found", f.name)
        }
        // A call through a pointer.
        ("jalr", _) => f.indirect = true,
        // A jump through a register with the frame still allocated (or loaded from a
        // constant table, in a function without a frame): a jump table, targets in this
        // function. After the epilogue: an indirect tail call.
        _ if !st.released && (f.frame > 0 || st.table_entry.contains(reg)) => {
            f.jump_table = true;
        }
        _ => f.indirect = true,
    }
    Ok(())
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
        Self::parse(&String::from_utf8_lossy(&out.stdout))
            .with_context(|| format!("reading the disassembly of {}", elf.display()))
    }

    /// Builds the graph from `llvm-objdump -d --no-show-raw-insn` output (Thumb-2, or RISC-V
    /// when the header says `file format elf32-littleriscv`).
    pub fn parse(disassembly: &str) -> Result<Self> {
        let riscv =
            disassembly.lines().take(8).any(|l| l.contains("file format elf32-littleriscv"));
        let mut functions: HashMap<u64, Function> = HashMap::new();
        // Branch targets per function, resolved to calls once every start is known.
        let mut branches: Vec<(u64, BranchTo, bool)> = Vec::new();
        // Raw label names and their addresses (RISC-V jumps may name their target).
        let mut labels: HashMap<String, u64> = HashMap::new();
        let mut current: Option<u64> = None;
        let mut rv = RiscvState::default();
        // Thumb: literal-pool words by address, and registers loaded from one.
        let mut words: HashMap<u64, u64> = HashMap::new();
        let mut pool_regs: HashMap<String, u64> = HashMap::new();
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
                        rv = RiscvState::default();
                        pool_regs.clear();
                    }
                    continue;
                }
            }
            let Some(at) = current else { continue };
            let Some(f) = functions.get_mut(&at) else { continue };
            // `     4c2:      \tsub\tsp, #76    @ comment`
            let Some((pc, insn)) = line.split_once(':') else { continue };
            // `     218: 65 cd 00 00  \t.word\t0x0000cd65`: a literal-pool word.
            if let Some(word) = insn.split_once(".word").map(|(_, w)| w.trim()) {
                if let (Ok(a), Some(w)) = (u64::from_str_radix(pc.trim(), 16), immediate(word)) {
                    words.insert(a, w);
                }
                continue;
            }
            let insn = insn.split(" @ ").next().unwrap_or("").trim();
            let (mnemonic, ops) = insn.split_once(char::is_whitespace).unwrap_or((insn, ""));
            let ops = ops.trim();
            if riscv {
                let Ok(pc) = u64::from_str_radix(pc.trim(), 16) else { continue };
                riscv_insn(f, &mut rv, at, pc, mnemonic, ops, &mut branches)?;
                continue;
            }
            // Registers holding a literal-pool function address.
            let first = ops.split(',').next().unwrap_or("").trim();
            let pool = match line.split_once(" @ ") {
                Some((_, c)) if mnemonic.starts_with("ldr") && ops.contains("[pc") => {
                    branch_target(c)
                }
                _ => None,
            };
            let via_pool = pool_regs.get(ops).copied();
            if mnemonic.starts_with("pop") || mnemonic.starts_with("ldm") {
                // The registers it loads (and an `ldm` base written back).
                let list = ops.split('{').nth(1).and_then(|l| l.split('}').next()).unwrap_or("");
                for r in list.split(',').chain([first.trim_end_matches('!')]) {
                    pool_regs.remove(r.trim());
                }
            } else if thumb_writes_first_operand(mnemonic) {
                // `mov rD, rS` copies a pool address (a tail call moves it to a scratch
                // register before the epilogue).
                let copied = match mnemonic {
                    "mov" | "mov.w" => {
                        ops.split(',').nth(1).and_then(|r| pool_regs.get(r.trim())).copied()
                    }
                    _ => None,
                };
                match pool.or(copied) {
                    Some(a) => pool_regs.insert(first.to_owned(), a),
                    None => pool_regs.remove(first),
                };
            }
            match mnemonic {
                // `blx rN` / `bx rN` to a function whose address came from the literal pool:
                // a direct call (tail call).
                "blx" | "bx" if via_pool.is_some() => {
                    if let Some(w) = via_pool {
                        branches.push((at, BranchTo::Pool(w), mnemonic == "blx"));
                    }
                }
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
                // Table branches: the targets are inside the function.
                "tbb" | "tbh" => f.jump_table = true,
                // `bx lr` returns; any other register branch is a call through a pointer.
                "blx" | "bx" if !ops.contains('<') && ops != "lr" => f.indirect = true,
                "bx" if ops == "lr" => {}
                "bl" | "blx" => {
                    if let Some(t) = branch_target(ops) {
                        branches.push((at, BranchTo::Addr(t), true));
                    }
                }
                m if m.starts_with('b') && ops.contains('<') && !m.starts_with("bic") => {
                    // A branch: a tail call when it lands on another function's start.
                    if let Some(t) = branch_target(ops) {
                        branches.push((at, BranchTo::Addr(t), false));
                    }
                }
                _ => {}
            }
        }
        for (from, to, call) in branches {
            let to = match to {
                BranchTo::Addr(a) => a,
                // The word's Thumb bit cleared; an unknown word: a call through a pointer.
                BranchTo::Pool(w) => match words.get(&w) {
                    Some(v) => v & !1,
                    None => {
                        if let Some(f) = functions.get_mut(&from) {
                            f.indirect = true;
                        }
                        continue;
                    }
                },
                BranchTo::Symbol(name, offset) => match labels.get(&name) {
                    Some(a) => a + offset,
                    None => bail!("a jump to {name:?}, which is no label of the image"),
                },
            };
            if to != from && (call || functions.contains_key(&to)) {
                if let Some(f) = functions.get_mut(&from) {
                    f.calls.insert(to);
                }
            }
        }
        // An image whose calls all went unresolved would bound one frame and still pass.
        if riscv && functions.len() > 1 && functions.values().all(|f| f.calls.is_empty()) {
            bail!("no call found in a RISC-V image: the disassembly is not in a form this reads");
        }
        Ok(Self { functions })
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

    /// Every function reachable from the entry that calls through a pointer or moves `sp`
    /// by a register amount, on the deepest chains or not: where a bound can be too low.
    pub fn unbounded_reachable(&self) -> Vec<String> {
        let mut seen = BTreeSet::new();
        let mut todo: Vec<u64> = self.entry().into_iter().collect();
        let mut found = Vec::new();
        while let Some(a) = todo.pop() {
            if !seen.insert(a) {
                continue;
            }
            let Some(f) = self.functions.get(&a) else { continue };
            if f.indirect || f.dynamic {
                found.push(f.name.clone());
            }
            todo.extend(f.calls.iter().copied());
        }
        found.sort();
        found
    }

    /// The bound of the whole program: the entry point's deepest chain.
    /// Fails if the image has no entry symbol (the bounds from the top would all be 0 B
    /// short).
    pub fn program(&self) -> Result<Bound> {
        let entry = self
            .entry()
            .ok_or_else(|| anyhow!("no entry symbol ({}) in the image", ENTRY.join(", ")))?;
        let name = &self.functions[&entry].name;
        self.bounds(name)
            .into_iter()
            .find(|b| b.root == *name)
            .ok_or_else(|| anyhow!("no bound for the entry {name}"))
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

/// Prints the functions reachable from the entry that call through a pointer (or allocate
/// dynamically): the bounds do not follow those calls.
fn print_unbounded(graph: &Graph) {
    let names: Vec<String> = graph.unbounded_reachable().iter().map(|n| short(n)).collect();
    if !names.is_empty() {
        println!(
            "  reachable calls through a pointer or dynamic frames (not followed): {}",
            names.join(", ")
        );
    }
}

/// `llvm-objdump`: the pinned toolchain's (`llvm-tools` in rust-toolchain.toml, so every
/// machine that builds the firmware has it), else one on the `PATH` (Debian package llvm);
/// `LLVM_OBJDUMP` overrides both.
fn objdump() -> Option<String> {
    if let Some(p) = std::env::var_os("LLVM_OBJDUMP") {
        return Some(p.to_string_lossy().into_owned());
    }
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
    let program = graph.program()?;
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
    bounds.push(program);
    let mut over = print(&bounds, limit);
    print_unbounded(&graph);
    // The whole-program figure is a bound only while no reachable code calls through a
    // pointer (issue 8: the README and CI rely on it): such a call fails the check.
    let unbounded = graph.unbounded_reachable();
    if !unbounded.is_empty() {
        let names: Vec<String> = unbounded.iter().map(|n| short(n)).collect();
        over.push(format!(
            "calls through a pointer or dynamic frames reachable (the stack bound would be a \
             lower bound): {}",
            names.join(", ")
        ));
    }
    Ok(over)
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
            crate::qemu::Curve::Fiat,
        )?,
    };
    let graph = Graph::of_elf(&elf)?;
    let program = graph.program()?;
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
        bounds.push(program);
    }
    let over = print(&bounds, args.limit);
    print_unbounded(&graph);
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
mote-client:\tfile format elf32-littleriscv

Disassembly of section .text:

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
        let g = Graph::parse(DIS_RISCV).unwrap();
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
        assert_eq!(g.program().ok().map(|p| p.total()), Some(0x10 + 0x20 + 0x800));
    }

    /// The same code as llvm-objdump 22 (hex, `jalr` named) and 14 (decimal, `jalr` bare)
    /// print it: calls resolved from the `auipc` before them, `<sym+0x..>` targets, a large
    /// frame built in a register, a jump table, an indirect tail call and an indirect call.
    fn riscv_listing(new_style: bool) -> String {
        let (main, leaf, big, table) = if new_style {
            ("0x1c(ra) <main>", "0x1c(ra) <leaf>", "0x24(ra) <big>", "0x3c(t1) <table>")
        } else {
            ("28(ra)", "28(ra)", "36(ra)", "60(t1)")
        };
        let imm = |h: &'static str, d: &'static str| if new_style { h } else { d };
        let (m16, m32, p16, zero) =
            (imm("-0x10", "-16"), imm("-0x20", "-32"), imm("0x10", "16"), imm("0x0", "0"));
        let (one, m7f0, m40, hi) = (
            imm("0x1", "1"),
            imm("-0x7f0", "-2032"),
            imm("-0x40", "-64"),
            imm("0x80019", "524313"),
        );
        format!(
            "fw:\tfile format elf32-littleriscv\n\
80000000 <_start_rust>:
80000000:      \taddi\tsp, sp, {m16}
80000004:      \tauipc\tra, {zero}
80000008:      \tjalr\t{main}
8000000c:      \tret
80000020 <main>:
80000020:      \taddi\tsp, sp, {m32}
80000024:      \tauipc\tra, {zero}
80000028:      \tjalr\t{leaf}
8000002c:      \tauipc\tra, {zero}
80000030:      \tjalr\t{big}
80000034:      \tauipc\tt1, {zero}
80000038:      \tjr\t{table}
80000040 <leaf>:
80000040:      \tjalr\ts2
80000044:      \taddi\tsp, sp, {p16}
80000048:      \tjr\ta5
80000050 <big>:
80000050:      \tlui\tt0, {one}
80000054:      \taddi\tt0, t0, {m7f0}
80000058:      \tsub\tsp, sp, t0
8000005c:      \tli\tt1, {m40}
80000060:      \tadd\tsp, sp, t1
80000064:      \tret
80000070 <table>:
80000070:      \tlui\ta1, {hi}
80000074:      \tadd\ta0, a0, a1
80000078:      \tlw\ta0, {zero}(a0)
8000007c:      \tjr\ta0
"
        )
    }

    #[test]
    fn riscv_objdump_styles_resolve_the_same_calls() {
        for new_style in [true, false] {
            let g = Graph::parse(&riscv_listing(new_style)).unwrap();
            let calls = |a: u64| g.functions[&a].calls.iter().copied().collect::<Vec<_>>();
            assert_eq!(calls(0x80000000), vec![0x80000020], "new style {new_style}");
            // `leaf`, `big` and the tail call to `table`.
            assert_eq!(calls(0x80000020), vec![0x80000040, 0x80000050, 0x80000070]);
            // A large frame: `lui`+`addi` into t0, `sub sp, sp, t0`, then `add sp, sp, -64`.
            let big = &g.functions[&0x80000050];
            assert_eq!((big.frame, big.dynamic), (0x1000 - 0x7f0 + 0x40, false));
            // `leaf`: `jalr s2` is an indirect call, `jr a5` after the epilogue an indirect
            // tail call; `table`'s `jr a0` (loaded from a constant table) a jump table.
            let leaf = &g.functions[&0x80000040];
            assert!(leaf.indirect && !leaf.jump_table);
            let table = &g.functions[&0x80000070];
            assert!(table.jump_table && !table.indirect);
            // Off the deepest chain (`big`), still listed.
            let b = g.program().unwrap();
            assert_eq!(b.total(), 0x10 + 0x20 + 0x850);
            assert!(b.lower_bound_because.is_empty());
            assert_eq!(g.unbounded_reachable(), vec!["leaf".to_owned()]);
        }
    }

    #[test]
    fn riscv_unresolvable_input_fails() {
        let head = "fw:\tfile format elf32-littleriscv\n";
        let parse = |body: &str| Graph::parse(&format!("{head}{body}"));
        // A PC-relative call without its `auipc` and without a symbol.
        let no_auipc = "80000000 <a>:\n80000000:      \tjalr\t24(ra)\n80000004 <b>:\n";
        assert!(parse(no_auipc).is_err());
        // A call to a name that is no label.
        let unknown = "80000000 <a>:\n80000000:      \tjalr\t0x18(ra) <nowhere>\n80000004 <b>:\n";
        assert!(parse(unknown).is_err());
        // No entry symbol: no bound from the top of the stack.
        let no_entry = "80000000 <a>:\n80000000:      \tjal\t0x80000004 <b>\n80000004 <b>:\n";
        assert!(parse(no_entry).unwrap().program().is_err());
        // No call at all (every call unresolved): refused rather than one frame.
        let no_calls = "80000000 <a>:\n80000000:      \tret\n80000004 <b>:\n80000004:      \tret\n";
        assert!(parse(no_calls).is_err());
        // Without its `auipc`, a named `<sym+0x..>` target is the label plus the offset.
        let offset = "80000000 <a>:\n80000000:      \tjalr\t0x18(ra) <b+0x4>\n80000004 <b>:\n";
        let g = parse(offset).unwrap();
        assert_eq!(
            g.functions[&0x80000000].calls.iter().copied().collect::<Vec<_>>(),
            vec![0x80000008]
        );
    }

    #[test]
    fn riscv_sp_writes_and_t0_jumps() {
        let dis = "fw:\tfile format elf32-littleriscv
80000000 <_start_rust>:
80000000:      \taddi\tsp, sp, -0x10
80000004:      \tjal\t0x80000010 <b>
80000008:      \tjal\t0x80000020 <c>
8000000c:      \tjal\t0x80000030 <OUTLINED_FUNCTION_0>
80000010 <b>:
80000010:      \tmv\tsp, s0
80000014:      \tsub\tsp, sp, a0
80000018:      \taddi\tsp, sp, -bad
80000020 <c>:
80000020:      \tjr\tt0
80000030 <OUTLINED_FUNCTION_0>:
80000030:      \tjr\tt0
";
        let g = Graph::parse(dis).unwrap();
        assert!(g.functions[&0x80000010].dynamic);
        assert_eq!(g.functions[&0x80000010].frame, 0);
        // `jr t0` returns from outlined code only; elsewhere it leaves through a pointer.
        assert!(g.functions[&0x80000020].indirect);
        assert!(!g.functions[&0x80000030].indirect);
        assert_eq!(g.unbounded_reachable(), vec!["b".to_owned(), "c".to_owned()]);
    }

    #[test]
    fn thumb_calls_through_literal_pool_registers() {
        // -Oz: `ldr r6, [pc, #n]` loads a function's address (Thumb bit set) from the literal
        // pool, `blx r6` calls it (and `bx r2` after `mov r2, r6` and the epilogue tail-calls
        // it); `r5` is overwritten before its `blx`: a pointer call.
        let dis = "\
00000100 <Reset>:
     100:      \tpush\t{r4, r5, r6, lr}
     102:      \tldr\tr6, [pc, #0xc]          @ 0x110 <Reset+0x10>
     104:      \tldr\tr5, [pc, #0xc]          @ 0x114 <Reset+0x14>
     106:      \tblx\tr6
     108:      \tmov\tr5, r0
     10a:      \tblx\tr5
     10c:      \tmov\tr2, r6
     10e:      \tpop\t{r4, r5, r6, lr}
     10f:      \tbx\tr2
00000110 <$d>:
     110: 01 02 00 00  \t.word\t0x00000201
     114: 01 02 00 00  \t.word\t0x00000201
00000200 <callee>:
     200:      \tsub\tsp, #0x40
     202:      \tbx\tlr
";
        let g = Graph::parse(dis).unwrap();
        let reset = &g.functions[&0x100];
        assert_eq!(reset.calls.iter().copied().collect::<Vec<_>>(), vec![0x200]);
        assert!(reset.indirect);
        assert_eq!(g.program().unwrap().total(), 16 + 0x40);
    }

    #[test]
    fn elf_and_target_are_not_taken_together() {
        #[derive(clap::Parser)]
        struct Cli {
            #[command(flatten)]
            stack: StackArgs,
        }
        use clap::Parser;
        let riscv = ["--target", "riscv32imc-unknown-none-elf"];
        assert!(Cli::try_parse_from(["stack", "--elf", "fw.elf"].iter().chain(&riscv)).is_err());
        assert!(Cli::try_parse_from(["stack"].iter().chain(&riscv)).is_ok());
    }

    #[test]
    fn frames_calls_and_tail_calls() {
        let g = Graph::parse(DIS).unwrap();
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
        assert_eq!(g.program().ok().map(|p| p.total()), Some(8 + 36 + 2020));
    }
}
