//! A small writer of textual LLVM IR (LLVM 14, typed pointers) for one
//! function: fresh value and label names, instructions, and blocks whose
//! parameters are stack slots (`alloca` in the entry block; a jump stores
//! the arguments, the block loads them). LLVM's `mem2reg`/`SROA`, the first
//! passes of `default<O3>`, turn the slots into phi nodes, as for clang's
//! output.
//!
//! Values are operands as text (`%t12`, `42`, `0x3FF0000000000000`) with
//! their LLVM type ([`Ty`]): the writer never needs to look a value up.

use std::fmt::Write;

/// An LLVM type of one flattened part of an L0 value.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Ty {
    I8,
    I16,
    I32,
    I64,
    F32,
    F64,
    /// `i8*`: buffer data and `arr` headers.
    Ptr,
}

impl Ty {
    /// The type's spelling.
    pub fn name(self) -> &'static str {
        match self {
            Ty::I8 => "i8",
            Ty::I16 => "i16",
            Ty::I32 => "i32",
            Ty::I64 => "i64",
            Ty::F32 => "float",
            Ty::F64 => "double",
            Ty::Ptr => "i8*",
        }
    }
    /// Size in bytes in memory.
    pub fn bytes(self) -> u32 {
        match self {
            Ty::I8 => 1,
            Ty::I16 => 2,
            Ty::I32 | Ty::F32 => 4,
            Ty::I64 | Ty::F64 | Ty::Ptr => 8,
        }
    }
    /// The TBAA tag of a memory access of this type to element data.
    fn elem_tbaa(self) -> &'static str {
        match self {
            Ty::I8 => "!4",
            Ty::I32 => "!6",
            Ty::I64 => "!8",
            Ty::F32 => "!10",
            Ty::F64 => "!12",
            Ty::Ptr => "!14",
            Ty::I16 => "!16",
        }
    }
}

/// What memory an access touches, for type-based alias analysis: `arr`
/// headers and element data live in different allocations, and elements of
/// different types never overlap (each buffer holds one element type).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Mem {
    /// A field of an `arr` header.
    Header,
    /// An element (or part of one) of a buffer.
    Elem,
    /// Anything else (result structs, argument words): no tag.
    Other,
}

/// A named block with parameter slots.
#[derive(Clone, Debug)]
pub struct Blk {
    pub label: String,
    pub slots: Vec<(Ty, String)>,
}

/// The text of one function under construction.
#[derive(Default)]
pub struct FnWriter {
    body: String,
    allocas: String,
    next: u32,
    cold: Vec<String>,
}

impl FnWriter {
    /// A fresh value name.
    pub fn tmp(&mut self) -> String {
        self.next += 1;
        format!("%t{}", self.next)
    }
    /// A fresh block with parameter slots of types `tys`.
    pub fn block(&mut self, tys: &[Ty]) -> Blk {
        self.next += 1;
        let label = format!("b{}", self.next);
        let slots = tys
            .iter()
            .map(|&t| {
                let s = self.tmp();
                let _ = writeln!(self.allocas, "  {s} = alloca {}, align 8", t.name());
                (t, s)
            })
            .collect();
        Blk { label, slots }
    }
    /// Marks `b` cold (its branch gets weights that favour the other side).
    pub fn set_cold(&mut self, b: &Blk) {
        self.cold.push(b.label.clone());
    }
    /// A raw line in the current block.
    pub fn line(&mut self, s: impl AsRef<str>) {
        self.body.push_str("  ");
        self.body.push_str(s.as_ref());
        self.body.push('\n');
    }
    /// `%t = <rhs>`; returns `%t`.
    pub fn val(&mut self, rhs: impl AsRef<str>) -> String {
        let t = self.tmp();
        let _ = writeln!(self.body, "  {t} = {}", rhs.as_ref());
        t
    }
    /// A stack slot of `bytes` bytes (aligned to 8), in the entry block.
    pub fn stack(&mut self, bytes: u32) -> String {
        let s = self.tmp();
        let _ = writeln!(
            self.allocas,
            "  {s} = alloca [{} x i8], align 8",
            bytes.max(8)
        );
        self.val(format!(
            "getelementptr inbounds [{} x i8], [{} x i8]* {s}, i64 0, i64 0",
            bytes.max(8),
            bytes.max(8)
        ))
    }
    /// Starts block `b` and returns its parameters (loaded from the slots).
    pub fn start(&mut self, b: &Blk) -> Vec<String> {
        let _ = writeln!(self.body, "{}:", b.label);
        b.slots
            .iter()
            .map(|(t, s)| {
                let n = t.name();
                self.val(format!("load {n}, {n}* {s}, align 8"))
            })
            .collect()
    }
    fn store_args(&mut self, b: &Blk, vals: &[String]) {
        for ((t, s), v) in b.slots.iter().zip(vals) {
            let n = t.name();
            self.line(format!("store {n} {v}, {n}* {s}, align 8"));
        }
    }
    /// `br label %b` passing `vals`.
    pub fn jump(&mut self, b: &Blk, vals: &[String]) {
        self.store_args(b, vals);
        self.line(format!("br label %{}", b.label));
    }
    /// A conditional branch on the `i1` value `c`, passing `tv` / `ev`.
    pub fn brif(&mut self, c: &str, t: &Blk, tv: &[String], e: &Blk, ev: &[String]) {
        let (t_args, e_args) = (!t.slots.is_empty(), !e.slots.is_empty());
        // Each edge with arguments goes through its own block that stores them.
        let via = |w: &mut FnWriter, b: &Blk, has: bool| -> String {
            if has {
                w.next += 1;
                format!("e{}", w.next)
            } else {
                b.label.clone()
            }
        };
        let tl = via(self, t, t_args);
        let el = via(self, e, e_args);
        let prof = if self.cold.contains(&e.label) {
            format!(", !prof {LIKELY}")
        } else if self.cold.contains(&t.label) {
            format!(", !prof {UNLIKELY}")
        } else {
            String::new()
        };
        self.line(format!("br i1 {c}, label %{tl}, label %{el}{prof}"));
        if t_args {
            let _ = writeln!(self.body, "{tl}:");
            self.jump(t, tv);
        }
        if e_args {
            let _ = writeln!(self.body, "{el}:");
            self.jump(e, ev);
        }
    }
    /// `load` of type `t` at `ptr + off` (an `i8*`), tagged for `mem`.
    pub fn load(&mut self, t: Ty, ptr: &str, off: i64, mem: Mem) -> String {
        let p = self.typed_at(t, ptr, off);
        let n = t.name();
        let tag = tbaa(t, mem);
        self.val(format!("load {n}, {n}* {p}, align {}{tag}", t.bytes()))
    }
    /// `store` of `v` (type `t`) at `ptr + off`, tagged for `mem`.
    pub fn store(&mut self, t: Ty, v: &str, ptr: &str, off: i64, mem: Mem) {
        let p = self.typed_at(t, ptr, off);
        let n = t.name();
        let tag = tbaa(t, mem);
        self.line(format!("store {n} {v}, {n}* {p}, align {}{tag}", t.bytes()));
    }
    /// `ptr + off` as a `t*`.
    fn typed_at(&mut self, t: Ty, ptr: &str, off: i64) -> String {
        let a = if off == 0 {
            ptr.to_string()
        } else {
            self.val(format!("getelementptr inbounds i8, i8* {ptr}, i64 {off}"))
        };
        if t == Ty::I8 {
            return a;
        }
        self.val(format!("bitcast i8* {a} to {}*", t.name()))
    }
    /// The address of element `i` of `size` bytes at `data` (an `i8*`).
    /// Scalar elements are indexed with a typed GEP so that LLVM's loop
    /// analyses see an affine address.
    pub fn elem_addr(&mut self, data: &str, i: &str, size: u32, scalar: Option<Ty>) -> String {
        match scalar {
            Some(t) if t.bytes() == size && t != Ty::I8 => {
                let n = t.name();
                let tp = self.val(format!("bitcast i8* {data} to {n}*"));
                let e = self.val(format!("getelementptr inbounds {n}, {n}* {tp}, i64 {i}"));
                self.val(format!("bitcast {n}* {e} to i8*"))
            }
            _ => {
                let off = if size == 1 {
                    i.to_string()
                } else {
                    self.val(format!("mul i64 {i}, {size}"))
                };
                self.val(format!("getelementptr inbounds i8, i8* {data}, i64 {off}"))
            }
        }
    }
    /// The function's text: `header {`, the entry block with every slot,
    /// then the body (which must start with a label), `}`.
    pub fn finish(self, header: &str, first: &str) -> String {
        format!(
            "{header} {{\nentry:\n{}  br label %{first}\n{}}}\n",
            self.allocas, self.body
        )
    }
}

fn tbaa(t: Ty, mem: Mem) -> String {
    match mem {
        Mem::Header => ", !tbaa !2".into(),
        Mem::Elem => format!(", !tbaa {}", t.elem_tbaa()),
        Mem::Other => String::new(),
    }
}

/// The module-level metadata: the TBAA type tree (`!0` the root; per kind
/// of memory a scalar type `!(2k+1)` and its access tag `!(2k+2)`: `!2`
/// arr headers, `!4` i8, `!6` i32, `!8` i64, `!10` f32, `!12` f64, `!14`
/// pointers, `!16` i16), then branch weights [`LIKELY`] and [`UNLIKELY`].
/// The branch weights of a likely then-branch (after the TBAA nodes).
const LIKELY: &str = "!17";
/// The branch weights of an unlikely then-branch.
const UNLIKELY: &str = "!18";
/// How many metadata nodes [`metadata`] defines (`!0` to `!18`); a module
/// numbers its own nodes from here.
pub const METADATA_NODES: usize = 19;

pub fn metadata() -> String {
    let mut s = String::new();
    s.push_str("!0 = !{!\"l0 tbaa\"}\n");
    let kinds = [
        "l0 arr header",
        "l0 i8",
        "l0 i32",
        "l0 i64",
        "l0 f32",
        "l0 f64",
        "l0 ptr",
        "l0 i16",
    ];
    for (k, name) in kinds.iter().enumerate() {
        let ty = 1 + 2 * k;
        let _ = writeln!(s, "!{ty} = !{{!\"{name}\", !0, i64 0}}");
        let _ = writeln!(s, "!{} = !{{!{ty}, !{ty}, i64 0}}", ty + 1);
    }
    let n = 1 + 2 * kinds.len();
    debug_assert_eq!(format!("!{n}"), LIKELY);
    let _ = writeln!(s, "!{n} = !{{!\"branch_weights\", i32 2000, i32 1}}");
    let _ = writeln!(s, "!{} = !{{!\"branch_weights\", i32 1, i32 2000}}", n + 1);
    debug_assert_eq!(n + 2, METADATA_NODES);
    s
}
