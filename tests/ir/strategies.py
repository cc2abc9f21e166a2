"""Hypothesis strategies for IR programs.

`programs()` draws syntactically arbitrary programs (every node kind, any nesting)
for print/parse roundtrips; `valid_programs()` draws programs that must verify.
"""

from __future__ import annotations

import math

from hypothesis import strategies as st

from solar.ir import (
    BINARY_OPS,
    FUNCTIONS,
    Access,
    Assign,
    Binary,
    BoolLit,
    Call,
    Cast,
    DType,
    Expr,
    FloatLit,
    For,
    If,
    IntLit,
    Kernel,
    Name,
    Program,
    Reduce,
    ReduceOp,
    SizeDecl,
    Stmt,
    TensorDecl,
    Unary,
)

__all__ = ["exprs", "programs", "valid_programs"]

# Never keywords of the grammar (a keyword lexes as itself where it is expected).
NAMES = ("i", "j", "k", "n", "x_1", "acc", "M", "N", "K", "T0", "buf", "_tmp", "maxv", "sizes")
ROLES = ("input", "param", "output", "temp")
REDUCE_OPS: tuple[ReduceOp, ...] = ("+", "*", "max", "min")

names = st.sampled_from(NAMES)
floats = st.one_of(
    st.floats(min_value=0.0, allow_infinity=True).filter(lambda x: math.copysign(1.0, x) > 0),
    st.just(math.nan),
    st.sampled_from([1e-05, 0.5, 1e16, 1.5e-07, 5e-324, 1.7976931348623157e308]),
)
leaves: st.SearchStrategy[Expr] = st.one_of(
    st.integers(min_value=0, max_value=10**12).map(IntLit),
    floats.map(FloatLit),
    st.booleans().map(BoolLit),
    names.map(Name),
)


def _extend(children: st.SearchStrategy[Expr]) -> st.SearchStrategy[Expr]:
    small = st.lists(children, min_size=0, max_size=3).map(tuple)
    return st.one_of(
        st.builds(Access, names, small),
        st.builds(Unary, st.sampled_from(["-", "not"]), children),
        st.builds(Binary, st.sampled_from(BINARY_OPS), children, children),
        st.builds(Call, st.sampled_from(sorted(FUNCTIONS)), small),
        st.builds(Cast, st.sampled_from(list(DType)), children),
    )


def exprs(max_leaves: int = 12) -> st.SearchStrategy[Expr]:
    """Any expression tree (all node kinds, arbitrary nesting)."""
    return st.recursive(leaves, _extend, max_leaves=max_leaves)


def _accesses() -> st.SearchStrategy[Access]:
    return st.builds(Access, names, st.lists(exprs(4), max_size=3).map(tuple))


def _stmts(depth: int) -> st.SearchStrategy[Stmt]:
    leaf = st.one_of(
        st.builds(Assign, _accesses(), exprs()),
        st.builds(Reduce, _accesses(), st.sampled_from(REDUCE_OPS), exprs()),
    )
    if depth == 0:
        return leaf
    body = st.lists(_stmts(depth - 1), max_size=3).map(tuple)
    return st.one_of(
        leaf,
        st.builds(
            For,
            names,
            exprs(4),
            exprs(4),
            body,
            step=st.integers(min_value=1, max_value=4),
            seq=st.booleans(),
        ),
        st.builds(If, exprs(6), body),
    )


def _decls(role: st.SearchStrategy[str]) -> st.SearchStrategy[TensorDecl]:
    return st.builds(
        TensorDecl,
        names,
        role,
        st.sampled_from(list(DType)),
        st.lists(exprs(3), max_size=3).map(tuple),
    )


programs: st.SearchStrategy[Program] = st.builds(
    Program,
    names,
    st.lists(st.builds(SizeDecl, names, exprs(5)), max_size=4).map(tuple),
    st.lists(_decls(st.sampled_from(ROLES)), max_size=4).map(tuple),
    st.lists(
        st.builds(
            Kernel,
            names,
            st.lists(_decls(st.just("local")), max_size=2).map(tuple),
            st.lists(_stmts(3), max_size=4).map(tuple),
            alias=st.booleans(),
        ),
        max_size=3,
    ).map(tuple),
    version=st.integers(min_value=0, max_value=10**6),
)


# Valid programs.
_SIZE_NAMES = ("N", "M", "K")


@st.composite
def _valid_value(
    draw: st.DrawFn, reads: list[Access], loop_vars: list[str], depth: int = 2
) -> Expr:
    """A float-valued expression over ``reads`` (in-bounds accesses) and loop indices."""
    options: list[st.SearchStrategy[Expr]] = [floats.filter(math.isfinite).map(FloatLit)]
    if reads:
        options.append(st.sampled_from(reads))
    if loop_vars:
        options.append(st.sampled_from(loop_vars).map(lambda v: Cast(DType.F32, Name(v))))
    leaf = draw(st.one_of(options))
    if depth == 0 or draw(st.booleans()):
        return leaf
    other = draw(_valid_value(reads, loop_vars, depth - 1))
    form = draw(st.integers(min_value=0, max_value=5))
    if form == 0:
        return Binary(draw(st.sampled_from(["+", "-", "*", "/"])), leaf, other)
    if form == 1:
        return Unary("-", leaf)
    if form == 2:
        return Call(draw(st.sampled_from(["exp", "tanh", "sigmoid", "abs"])), (leaf,))
    if form == 3:
        return Call("max", (leaf, other))
    if form == 4:
        return Call("select", (Binary("<", leaf, other), leaf, other))
    return Cast(DType.F32, Binary("%", Cast(DType.I64, leaf), IntLit(3)))


@st.composite
def valid_programs(draw: st.DrawFn) -> Program:
    """A random program that `verify_program` must accept.

    Each kernel writes one output or temp over a loop nest covering its shape; reads
    use the loop index of a dimension of the same size, ``0``, ``size - 1`` or a
    guarded ``i + 1``, so every access is in bounds; some kernels accumulate with a
    reduction over an extra loop, some loops are ``seq`` and step by 2.
    """
    n_sizes = draw(st.integers(min_value=1, max_value=3))
    size_names = _SIZE_NAMES[:n_sizes]
    sizes = tuple(
        SizeDecl(n, IntLit(draw(st.integers(min_value=1, max_value=6)))) for n in size_names
    )
    shape = st.lists(st.sampled_from(size_names), max_size=3).map(tuple)
    inputs = [
        TensorDecl(
            f"X{k}", draw(st.sampled_from(["input", "param"])), DType.F32, tuple(map(Name, s))
        )
        for k, s in enumerate(draw(st.lists(shape, min_size=1, max_size=3)))
    ]
    outputs = [
        TensorDecl(
            f"Y{k}", draw(st.sampled_from(["output", "temp"])), DType.F32, tuple(map(Name, s))
        )
        for k, s in enumerate(draw(st.lists(shape, min_size=1, max_size=3)))
    ]
    kernels = [draw(_valid_kernel(f"k{k}", out, inputs)) for k, out in enumerate(outputs)]
    views = []
    for k, src in enumerate(draw(st.lists(st.sampled_from(inputs + outputs), max_size=2))):
        # an output returned as a permuted view of an input, output or temp: an alias kernel
        perm = draw(st.permutations(range(len(src.shape))))
        views.append(TensorDecl(f"V{k}", "output", DType.F32, tuple(src.shape[p] for p in perm)))
        loop_vars = [f"i{d}" for d in range(len(perm))]
        idx: list[Expr] = [IntLit(0)] * len(perm)
        for d, p in enumerate(perm):
            idx[p] = Name(loop_vars[d])
        body: tuple[Stmt, ...] = (
            Assign(Access(f"V{k}", tuple(map(Name, loop_vars))), Access(src.name, tuple(idx))),
        )
        for var, dim in reversed(list(zip(loop_vars, views[-1].shape, strict=True))):
            body = (For(var, IntLit(0), dim, body),)
        kernels.append(Kernel(f"v{k}", (), body, alias=True))
    return Program("rand", sizes, (*inputs, *outputs, *views), tuple(kernels))


@st.composite
def _valid_kernel(draw: st.DrawFn, name: str, out: TensorDecl, inputs: list[TensorDecl]) -> Kernel:
    dims = [d.name for d in out.shape if isinstance(d, Name)]
    loop_vars = [f"i{d}" for d in range(len(dims))]
    target = Access(out.name, tuple(Name(v) for v in loop_vars))
    guarded: list[tuple[str, str]] = []
    reads: list[Access] = []
    safe: list[Access] = []  # reads that need no guard
    for decl in draw(st.lists(st.sampled_from(inputs), max_size=3)):
        idx: list[Expr] = []
        needs_guard = False
        for dim in decl.shape:
            assert isinstance(dim, Name)
            same = [v for v, d in zip(loop_vars, dims, strict=True) if d == dim.name]
            choice = draw(st.integers(min_value=0, max_value=3))
            if same and choice < 2:
                idx.append(Name(same[0]))
            elif same and choice == 2 and (not guarded or guarded[0] == (same[0], dim.name)):
                guarded[:] = [(same[0], dim.name)]
                needs_guard = True
                idx.append(Binary("+", Name(same[0]), IntLit(1)))
            elif choice == 3:
                idx.append(Binary("-", dim, IntLit(1)))
            else:
                idx.append(IntLit(0))
        reads.append(Access(decl.name, tuple(idx)))
        if not needs_guard:
            safe.append(reads[-1])
    value = draw(_valid_value(reads, loop_vars))
    body: tuple[Stmt, ...] = (Assign(target, value),)
    if guarded:
        guard_var, guard_size = guarded[0]
        cond = Binary("<", Binary("+", Name(guard_var), IntLit(1)), Name(guard_size))
        body = (Assign(target, FloatLit(0.0)), If(cond, body))
    if draw(st.booleans()):
        extra = draw(_valid_value(safe, [*loop_vars, "r"]))
        op = draw(st.sampled_from(REDUCE_OPS))
        body = (*body, For("r", IntLit(0), IntLit(3), (Reduce(target, op, extra),)))
    for var, dim_name in reversed(list(zip(loop_vars, dims, strict=True))):
        seq = draw(st.booleans())
        step = draw(st.sampled_from([1, 1, 2]))
        body = (For(var, IntLit(0), Name(dim_name), body, step=step, seq=seq),)
    return Kernel(name, (), body)
