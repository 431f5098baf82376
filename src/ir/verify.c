/* verify.c — structural and type checks of tensor programs (docs/ir.md, "Verifier").
 *
 * The verifier stops at the first problem and reports it with the function's name and
 * the offending node in the text form, so a pass that broke a program can be found from
 * the message alone. */
#include <string.h>

#include "ir/ir.h"
#include "task/task.h"

/* Definition state of a variable: never seen, visible now, or out of scope again. */
enum { VAR_UNSEEN, VAR_VISIBLE, VAR_GONE };

typedef struct var_slot {
    const hc_var *var;
    int state;
} var_slot;

typedef struct verifier {
    const hc_func *f;
    bool task_level;
    hc_error *err;
    var_slot *slots; /* open addressing on the var pointer */
    size_t cap, len;
    HC_VEC(const hc_var *) scope; /* definitions in order, popped when a block ends */
    const hc_stmt *cur;           /* statement whose expressions are being checked */
} verifier;

static size_t hash_ptr(const void *p) {
    uint64_t x = (uint64_t)(uintptr_t)p;
    x ^= x >> 31;
    x *= 0x9e3779b97f4a7c15ULL;
    x ^= x >> 29;
    return (size_t)x;
}

static var_slot *slot(verifier *V, const hc_var *v, bool insert) {
    if (insert && 2 * (V->len + 1) > V->cap) {
        var_slot *old = V->slots;
        size_t ocap = V->cap;
        V->cap = ocap ? 2 * ocap : 64;
        V->slots = hc_xcalloc(V->cap, sizeof(var_slot));
        V->len = 0;
        for (size_t i = 0; i < ocap; i++)
            if (old[i].var) slot(V, old[i].var, true)->state = old[i].state;
        free(old);
    }
    if (!V->cap) return NULL;
    size_t i = hash_ptr(v) & (V->cap - 1);
    for (; V->slots[i].var; i = (i + 1) & (V->cap - 1))
        if (V->slots[i].var == v) return &V->slots[i];
    if (!insert) return NULL;
    V->slots[i].var = v;
    V->len++;
    return &V->slots[i];
}

static int var_state(verifier *V, const hc_var *v) {
    var_slot *s = slot(V, v, false);
    return s ? s->state : VAR_UNSEEN;
}

/* ---- messages ----------------------------------------------------------------------- */
static bool fail(verifier *V, const char *what, const char *text) {
    hc_error_set(V->err, HC_ERR_INVALID, "verify: function '%s': %s: %s", V->f->name, what,
                 text);
    return false;
}

/* Only the statement's first line: a loop's whole body would drown the message. */
static void put_stmt_head(hc_sb *sb, const hc_stmt *s) {
    hc_sb tmp;
    hc_sb_init(&tmp);
    hc_print_stmt(&tmp, s, 0);
    const char *text = hc_sb_str(&tmp);
    const char *nl = strchr(text, '\n');
    hc_sb_printf(sb, "%.*s", nl ? (int)(nl - text) : (int)strlen(text), text);
    hc_sb_free(&tmp);
}

/* The expression, and the statement it belongs to for context. */
static bool fail_expr(verifier *V, const hc_expr *e, const char *what) {
    hc_sb sb;
    hc_sb_init(&sb);
    hc_print_expr(&sb, e);
    if (V->cur) {
        hc_sb_puts(&sb, " (in `");
        put_stmt_head(&sb, V->cur);
        hc_sb_puts(&sb, "`)");
    }
    fail(V, what, hc_sb_str(&sb));
    hc_sb_free(&sb);
    return false;
}

static bool fail_stmt(verifier *V, const hc_stmt *s, const char *what) {
    hc_sb sb;
    hc_sb_init(&sb);
    put_stmt_head(&sb, s);
    fail(V, what, hc_sb_str(&sb));
    hc_sb_free(&sb);
    return false;
}

static bool fail_var(verifier *V, const hc_var *v, const char *what) {
    hc_sb sb;
    hc_sb_init(&sb);
    hc_sb_printf(&sb, "%s: ", v->name);
    hc_print_type(&sb, v->type);
    fail(V, what, hc_sb_str(&sb));
    hc_sb_free(&sb);
    return false;
}

/* ---- scopes ------------------------------------------------------------------------- */
static bool define(verifier *V, const hc_var *v) {
    if (v->builtin != HC_BUILTIN_NONE) return fail_var(V, v, "a builtin variable is redefined");
    var_slot *s = slot(V, v, true);
    if (s->state != VAR_UNSEEN) return fail_var(V, v, "variable defined twice");
    s->state = VAR_VISIBLE;
    hc_vec_push(&V->scope, v);
    return true;
}

static void end_scope(verifier *V, size_t mark) {
    while (V->scope.len > mark) slot(V, V->scope.data[--V->scope.len], false)->state = VAR_GONE;
}

static bool visible(verifier *V, const hc_var *v) {
    return v->builtin != HC_BUILTIN_NONE || var_state(V, v) == VAR_VISIBLE;
}

/* ---- types -------------------------------------------------------------------------- */
static bool is_int(const hc_type *t) {
    return t->kind == HC_TY_SCALAR && hc_dtype_is_int(t->dtype);
}
static bool is_bool(const hc_type *t) {
    return (t->kind == HC_TY_SCALAR || t->kind == HC_TY_VECTOR) && t->dtype == HC_BOOL;
}
static bool is_value(const hc_type *t) {
    return t->kind == HC_TY_SCALAR || t->kind == HC_TY_VECTOR;
}

/* Element type of a load/store through buf, NULL when buf is not a buffer. */
/* Elements of a tensor of vectors (hc_type_tensor_vec) are vectors. */
static _Thread_local hc_type vec_elem;

static const hc_type *element_type(const hc_var *buf) {
    if (buf->type->kind == HC_TY_TENSOR && buf->type->lanes > 1) {
        vec_elem = (hc_type){.kind = HC_TY_VECTOR, .dtype = buf->type->dtype,
                             .lanes = buf->type->lanes};
        return &vec_elem;
    }
    if (buf->type->kind == HC_TY_TENSOR) return hc_type_scalar(buf->type->dtype);
    if (buf->type->kind == HC_TY_POINTER) return buf->type->pointee;
    return NULL;
}

/* ---- expressions -------------------------------------------------------------------- */
static bool check_expr(verifier *V, const hc_expr *e);

static bool check_indices(verifier *V, const hc_expr *owner, int n, hc_expr *const *idx) {
    for (int i = 0; i < n; i++) {
        if (!check_expr(V, idx[i])) return false;
        if (!is_int(idx[i]->type)) return fail_expr(V, owner, "index is not an integer");
    }
    return true;
}

static bool check_buffer(verifier *V, const hc_expr *owner, const hc_var *buf, int n) {
    if (!visible(V, buf)) return fail_expr(V, owner, "buffer used outside its scope");
    const hc_type *t = buf->type;
    if (t->kind != HC_TY_TENSOR && t->kind != HC_TY_POINTER)
        return fail_expr(V, owner, "indexed variable is not a tensor or pointer");
    int want = t->kind == HC_TY_TENSOR ? t->ndim : 1;
    if (n != want) return fail_expr(V, owner, "wrong number of indices");
    return true;
}

static bool check_binary(verifier *V, const hc_expr *e) {
    const hc_type *x = e->u.bin.a->type, *y = e->u.bin.b->type;
    hc_binop op = e->u.bin.op;
    if (x->kind == HC_TY_TENSOR || y->kind == HC_TY_TENSOR)
        return fail_expr(V, e, "tensor used as a value");
    if (x->kind == HC_TY_VECTOR && y->kind == HC_TY_VECTOR && x->lanes != y->lanes)
        return fail_expr(V, e, "vector operands with different lane counts");
    if ((op == HC_OP_AND || op == HC_OP_OR) && (!is_bool(x) || !is_bool(y)))
        return fail_expr(V, e, "logical operator on non-bool operands");
    bool bitwise = op == HC_OP_BITAND || op == HC_OP_BITOR || op == HC_OP_BITXOR ||
                   op == HC_OP_SHL || op == HC_OP_SHR || op == HC_OP_MOD;
    if (bitwise && (hc_dtype_is_float(x->dtype) || hc_dtype_is_float(y->dtype)))
        return fail_expr(V, e, "integer operator on float operands");
    return true;
}

/* A tile register: a constant 0-7. */
static bool is_tile(const hc_expr *e) {
    int64_t v;
    return hc_expr_is_const_int(e, &v) && v >= 0 && v < 8;
}

static bool check_tile_prim(verifier *V, const hc_expr *e) {
    hc_expr *const *a = e->u.call.args;
    if (e->type->kind != HC_TY_SCALAR || e->type->dtype != HC_VOID)
        return fail_expr(V, e, "a tile primitive has no value");
    switch (e->u.call.prim) {
    case HC_PRIM_TILE_ZERO:
        if (!is_tile(a[0])) return fail_expr(V, e, "tile_zero of a non-constant tile or not 0-7");
        return true;
    case HC_PRIM_TILE_LOAD:
    case HC_PRIM_TILE_STORE:
        if (!is_tile(a[0])) return fail_expr(V, e, "tile load/store of a tile not a constant 0-7");
        if (a[1]->type->kind != HC_TY_POINTER)
            return fail_expr(V, e, "tile load/store address is not a pointer");
        if (!is_int(a[2]->type)) return fail_expr(V, e, "tile load/store stride is not an integer");
        return true;
    case HC_PRIM_TILE_DP_BF16:
        if (!is_tile(a[0]) || !is_tile(a[1]) || !is_tile(a[2]))
            return fail_expr(V, e, "tile_dp_bf16 of tiles not constants 0-7");
        return true;
    default: return true; /* TILE_CONFIG, TILE_RELEASE: no arguments */
    }
}

static bool check_vector_prim(verifier *V, const hc_expr *e) {
    hc_expr *const *a = e->u.call.args;
    const hc_type *r = e->type;
    switch (e->u.call.prim) {
    case HC_PRIM_TILE_CONFIG:
    case HC_PRIM_TILE_RELEASE:
    case HC_PRIM_TILE_ZERO:
    case HC_PRIM_TILE_LOAD:
    case HC_PRIM_TILE_STORE:
    case HC_PRIM_TILE_DP_BF16: return check_tile_prim(V, e);
    default: break;
    }
    const hc_type *p = a[0]->type;
    switch (e->u.call.prim) {
    case HC_PRIM_VSTORE_BF16:
        if (p->kind != HC_TY_POINTER || p->pointee->dtype != HC_F32)
            return fail_expr(V, e, "vstore_bf16 to a non-f32 pointer");
        if (a[1]->type->kind != HC_TY_VECTOR || a[1]->type->dtype != HC_F32 ||
            a[1]->type->lanes % 2)
            return fail_expr(V, e, "vstore_bf16 value is not an f32 vector of even lanes");
        return true;
    case HC_PRIM_VLOAD_BF16X2:
        if (p->kind != HC_TY_POINTER || p->pointee->dtype != HC_F32)
            return fail_expr(V, e, "vload_bf16x2 of a non-f32 pointer");
        if (r->kind != HC_TY_VECTOR || r->dtype != HC_F32 || !is_int(a[1]->type))
            return fail_expr(V, e, "vload_bf16x2 gives an f32 vector from an integer half");
        return true;
    case HC_PRIM_VBF16_REST:
        if (p->kind != HC_TY_VECTOR || p->dtype != HC_F32 || !hc_type_equal(p, r))
            return fail_expr(V, e, "vbf16_rest needs an f32 vector and gives its type");
        return true;
    case HC_PRIM_VLOAD:
    case HC_PRIM_VLOAD_MASK:
        if (p->kind != HC_TY_POINTER) return fail_expr(V, e, "vload of a non-pointer");
        if (r->kind != HC_TY_VECTOR || r->dtype != p->pointee->dtype)
            return fail_expr(V, e, "vload result is not a vector of the pointee type");
        if (e->u.call.prim == HC_PRIM_VLOAD_MASK && !is_int(a[1]->type))
            return fail_expr(V, e, "vload_mask count is not an integer");
        return true;
    case HC_PRIM_VLOAD_RANGE:
        if (p->kind != HC_TY_POINTER) return fail_expr(V, e, "vload_range of a non-pointer");
        if (r->kind != HC_TY_VECTOR || r->dtype != p->pointee->dtype)
            return fail_expr(V, e, "vload_range result is not a vector of the pointee type");
        if (!is_int(a[1]->type) || !is_int(a[2]->type))
            return fail_expr(V, e, "vload_range lane bounds are not integers");
        return true;
    case HC_PRIM_VLOAD_STRIDED:
        if (p->kind != HC_TY_POINTER) return fail_expr(V, e, "vload_strided of a non-pointer");
        if (r->kind != HC_TY_VECTOR || r->dtype != p->pointee->dtype)
            return fail_expr(V, e, "vload_strided result is not a vector of the pointee type");
        if (!is_int(a[1]->type) || !is_int(a[2]->type) || !is_int(a[3]->type))
            return fail_expr(V, e, "vload_strided stride or lane bounds are not integers");
        return true;
    case HC_PRIM_VSTORE:
    case HC_PRIM_VSTORE_MASK:
        if (p->kind != HC_TY_POINTER) return fail_expr(V, e, "vstore to a non-pointer");
        if (a[1]->type->kind != HC_TY_VECTOR || a[1]->type->dtype != p->pointee->dtype)
            return fail_expr(V, e, "vstore value is not a vector of the pointee type");
        if (e->u.call.prim == HC_PRIM_VSTORE_MASK && !is_int(a[2]->type))
            return fail_expr(V, e, "vstore_mask count is not an integer");
        return true;
    case HC_PRIM_PREFETCH:
        if (p->kind != HC_TY_POINTER) return fail_expr(V, e, "prefetch of a non-pointer");
        if (r->kind != HC_TY_SCALAR || r->dtype != HC_VOID)
            return fail_expr(V, e, "prefetch has no value");
        return true;
    case HC_PRIM_VBROADCAST:
        if (p->kind != HC_TY_SCALAR || r->kind != HC_TY_VECTOR || r->dtype != p->dtype)
            return fail_expr(V, e, "vbroadcast needs a scalar of the vector's element type");
        return true;
    case HC_PRIM_VFMA:
        if (p->kind != HC_TY_VECTOR || !hc_type_equal(p, a[1]->type) ||
            !hc_type_equal(p, a[2]->type) || !hc_type_equal(p, r))
            return fail_expr(V, e, "vfma needs three vectors of the same type");
        return true;
    case HC_PRIM_VLOAD_BYTES:
    case HC_PRIM_VBROADCAST_BYTES:
        if (p->kind != HC_TY_POINTER || hc_dtype_size(p->pointee->dtype) != 1)
            return fail_expr(V, e, "byte load of a non-byte pointer");
        if (r->kind != HC_TY_VECTOR || r->dtype != HC_I32)
            return fail_expr(V, e, "byte load result is not an i32 vector");
        return true;
    case HC_PRIM_VDOT_U8S8:
        if (r->kind != HC_TY_VECTOR || r->dtype != HC_I32 || !hc_type_equal(p, r) ||
            !hc_type_equal(a[1]->type, r) || !hc_type_equal(a[2]->type, r))
            return fail_expr(V, e, "vdot_u8s8 needs three i32 vectors of the result's type");
        return true;
    default: /* VREDUCE_* */
        if (p->kind != HC_TY_VECTOR || r->kind != HC_TY_SCALAR || r->dtype != p->dtype)
            return fail_expr(V, e, "vector reduction needs a vector and gives its element");
        return true;
    }
}

static bool check_call(verifier *V, const hc_expr *e) {
    hc_prim p = e->u.call.prim;
    if (p >= HC_PRIM_COUNT) return fail_expr(V, e, "unknown primitive");
    if (e->u.call.nargs != hc_prim_arity(p)) return fail_expr(V, e, "wrong number of arguments");
    for (int i = 0; i < e->u.call.nargs; i++)
        if (!check_expr(V, e->u.call.args[i])) return false;
    if (hc_prim_is_vector(p)) return check_vector_prim(V, e);
    for (int i = 0; i < e->u.call.nargs; i++)
        if (!is_value(e->u.call.args[i]->type))
            return fail_expr(V, e, "math function of a pointer or tensor");
    return true;
}

static bool check_reduce(verifier *V, const hc_expr *e) {
    if (!V->task_level) return fail_expr(V, e, "task-level reduce in a program");
    size_t mark = V->scope.len;
    for (int i = 0; i < e->u.reduce.naxes; i++)
        if (!define(V, e->u.reduce.axes[i])) return false;
    bool ok = check_expr(V, e->u.reduce.value);
    end_scope(V, mark);
    return ok;
}

static bool check_access(verifier *V, const hc_expr *e) {
    if (!V->task_level) return fail_expr(V, e, "task-level tensor access in a program");
    const hc_tnode *t = e->u.access.tensor;
    if (!t || e->u.access.n != t->ndim) return fail_expr(V, e, "wrong number of indices");
    return check_indices(V, e, e->u.access.n, e->u.access.idx);
}

static bool check_cast(verifier *V, const hc_expr *e) {
    const hc_type *from = e->u.cast.a->type, *to = e->type;
    if (from->kind == HC_TY_TENSOR || to->kind == HC_TY_TENSOR)
        return fail_expr(V, e, "cast of or to a tensor");
    if ((from->kind == HC_TY_VECTOR) != (to->kind == HC_TY_VECTOR))
        return fail_expr(V, e, "cast between scalar and vector (use vbroadcast)");
    if (from->kind == HC_TY_VECTOR && from->lanes != to->lanes)
        return fail_expr(V, e, "cast changes the number of lanes");
    return true;
}

static bool check_select(verifier *V, const hc_expr *e) {
    const hc_type *c = e->u.sel.cond->type;
    if (!is_bool(c)) return fail_expr(V, e, "select condition is not bool");
    if (c->kind == HC_TY_VECTOR && (e->type->kind != HC_TY_VECTOR || c->lanes != e->type->lanes))
        return fail_expr(V, e, "vector select condition does not match the result lanes");
    return true;
}

static bool check_expr(verifier *V, const hc_expr *e) {
    if (!e || !e->type) return fail(V, "malformed expression", e ? "(no type)" : "(null)");
    switch (e->kind) {
    case HC_E_CONST:
        return e->type->kind == HC_TY_SCALAR ? true : fail_expr(V, e, "non-scalar constant");
    case HC_E_VAR:
        return visible(V, e->u.var) ? true : fail_expr(V, e, "variable used outside its scope");
    case HC_E_BINARY:
        return check_expr(V, e->u.bin.a) && check_expr(V, e->u.bin.b) && check_binary(V, e);
    case HC_E_UNARY:
        if (!check_expr(V, e->u.un.a)) return false;
        if (e->u.un.op == HC_OP_NOT && !is_bool(e->u.un.a->type))
            return fail_expr(V, e, "! of a non-bool");
        if (e->u.un.op == HC_OP_BITNOT && hc_dtype_is_float(e->u.un.a->type->dtype))
            return fail_expr(V, e, "~ of a float");
        return true;
    case HC_E_SELECT:
        return check_expr(V, e->u.sel.cond) && check_expr(V, e->u.sel.t) &&
               check_expr(V, e->u.sel.f) && check_select(V, e);
    case HC_E_CAST: return check_expr(V, e->u.cast.a) && check_cast(V, e);
    case HC_E_CALL: return check_call(V, e);
    case HC_E_LOAD:
    case HC_E_ADDRESS:
        return check_buffer(V, e, e->u.load.buf, e->u.load.n) &&
               check_indices(V, e, e->u.load.n, e->u.load.idx);
    case HC_E_TENSOR_ACCESS: return check_access(V, e);
    case HC_E_REDUCE: return check_reduce(V, e);
    }
    return fail(V, "unknown expression kind", "?");
}

/* ---- statements --------------------------------------------------------------------- */
static bool check_stmt(verifier *V, const hc_stmt *s);

/* A nested block: what it defines is gone when it ends. */
static bool check_block(verifier *V, const hc_stmt *s) {
    size_t mark = V->scope.len;
    bool ok = check_stmt(V, s);
    end_scope(V, mark);
    return ok;
}

static bool check_tensor_decl(verifier *V, const hc_stmt *s, const hc_type *t) {
    for (int i = 0; i < t->ndim; i++) {
        if (!check_expr(V, t->shape[i])) return false;
        if (!is_int(t->shape[i]->type))
            return fail_stmt(V, s, "tensor dimension is not an integer");
        if (t->scope == HC_SCOPE_REGISTER && !hc_expr_is_const_int(t->shape[i], NULL))
            return fail_stmt(V, s, "register tensor with a non-constant shape");
    }
    if (s->u.decl.init) return fail_stmt(V, s, "tensor declared with an initial value");
    return true;
}

static bool check_declare(verifier *V, const hc_stmt *s) {
    const hc_var *v = s->u.decl.var;
    if (v->type->kind == HC_TY_TENSOR && !check_tensor_decl(V, s, v->type)) return false;
    if (s->u.decl.init) {
        if (!check_expr(V, s->u.decl.init)) return false;
        if (!hc_type_equal(s->u.decl.init->type, v->type))
            return fail_stmt(V, s, "initial value's type differs from the variable's");
    }
    return define(V, v);
}

static bool check_store(verifier *V, const hc_stmt *s) {
    const hc_var *buf = s->u.store.buf;
    if (!visible(V, buf)) return fail_stmt(V, s, "buffer used outside its scope");
    const hc_type *el = element_type(buf);
    if (!el) return fail_stmt(V, s, "store to a variable that is not a tensor or pointer");
    int want = buf->type->kind == HC_TY_TENSOR ? buf->type->ndim : 1;
    if (s->u.store.n != want) return fail_stmt(V, s, "wrong number of indices");
    for (int i = 0; i < s->u.store.n; i++) {
        if (!check_expr(V, s->u.store.idx[i])) return false;
        if (!is_int(s->u.store.idx[i]->type)) return fail_stmt(V, s, "index is not an integer");
    }
    if (!check_expr(V, s->u.store.value)) return false;
    if (!hc_type_equal(s->u.store.value->type, el))
        return fail_stmt(V, s, "stored value's type differs from the element type");
    return true;
}

static bool check_assign(verifier *V, const hc_stmt *s) {
    const hc_var *v = s->u.assign.var;
    if (v->builtin != HC_BUILTIN_NONE) return fail_stmt(V, s, "assignment to a builtin");
    if (!visible(V, v)) return fail_stmt(V, s, "variable used outside its scope");
    if (v->type->kind == HC_TY_TENSOR) return fail_stmt(V, s, "assignment to a whole tensor");
    if (!check_expr(V, s->u.assign.value)) return false;
    if (!hc_type_equal(s->u.assign.value->type, v->type))
        return fail_stmt(V, s, "assigned value's type differs from the variable's");
    return true;
}

static bool check_let(verifier *V, const hc_stmt *s) {
    if (!check_expr(V, s->u.let.value)) return false;
    if (!hc_type_equal(s->u.let.value->type, s->u.let.var->type))
        return fail_stmt(V, s, "let value's type differs from the variable's");
    size_t mark = V->scope.len;
    bool ok = define(V, s->u.let.var) && check_stmt(V, s->u.let.body);
    end_scope(V, mark);
    return ok;
}

static bool check_for(verifier *V, const hc_stmt *s) {
    if (!check_expr(V, s->u.for_.extent)) return false;
    if (!is_int(s->u.for_.extent->type)) return fail_stmt(V, s, "loop extent is not an integer");
    if (!is_int(s->u.for_.var->type)) return fail_stmt(V, s, "loop variable is not an integer");
    size_t mark = V->scope.len;
    bool ok = define(V, s->u.for_.var) && check_stmt(V, s->u.for_.body);
    end_scope(V, mark);
    return ok;
}

static bool check_fmap(verifier *V, const hc_stmt *s) {
    if (!s->u.fmap.mapping || s->u.fmap.nvars != s->u.fmap.mapping->ndim)
        return fail_stmt(V, s, "number of variables differs from the mapping's rank");
    if (!check_expr(V, s->u.fmap.worker)) return false;
    if (!is_int(s->u.fmap.worker->type)) return fail_stmt(V, s, "worker is not an integer");
    size_t mark = V->scope.len;
    bool ok = true;
    for (int i = 0; ok && i < s->u.fmap.nvars; i++) {
        if (!is_int(s->u.fmap.vars[i]->type))
            ok = fail_stmt(V, s, "mapping variable is not an integer");
        else ok = define(V, s->u.fmap.vars[i]);
    }
    ok = ok && check_stmt(V, s->u.fmap.body);
    end_scope(V, mark);
    return ok;
}

static bool check_if(verifier *V, const hc_stmt *s) {
    if (!check_expr(V, s->u.if_.cond)) return false;
    if (!hc_type_is_scalar(s->u.if_.cond->type, HC_BOOL))
        return fail_stmt(V, s, "if condition is not a scalar bool");
    if (!check_block(V, s->u.if_.then_s)) return false;
    return !s->u.if_.else_s || check_block(V, s->u.if_.else_s);
}

static bool check_stmt(verifier *V, const hc_stmt *s) {
    if (!s) return fail(V, "malformed statement", "(null)");
    V->cur = s;
    switch (s->kind) {
    case HC_S_SEQ: {
        size_t mark = V->scope.len;
        bool ok = true;
        for (int i = 0; ok && i < s->u.seq.n; i++) ok = check_stmt(V, s->u.seq.stmts[i]);
        end_scope(V, mark);
        return ok;
    }
    case HC_S_DECLARE: return check_declare(V, s);
    case HC_S_LET: return check_let(V, s);
    case HC_S_ASSIGN: return check_assign(V, s);
    case HC_S_STORE: return check_store(V, s);
    case HC_S_EVAL: return check_expr(V, s->u.eval.e);
    case HC_S_IF: return check_if(V, s);
    case HC_S_FOR: return check_for(V, s);
    case HC_S_FOR_MAPPING: return check_fmap(V, s);
    case HC_S_BARRIER:
    case HC_S_COMMENT: return true;
    }
    return fail(V, "unknown statement kind", "?");
}

/* ---- functions ---------------------------------------------------------------------- */
static bool check_params(verifier *V, const hc_func *f) {
    for (int i = 0; i < f->nparams; i++)
        if (!define(V, f->params[i])) return false;
    /* Shapes may name other parameters (dynamic sizes), so they are checked after all. */
    for (int i = 0; i < f->nparams; i++) {
        const hc_type *t = f->params[i]->type;
        for (int d = 0; t->kind == HC_TY_TENSOR && d < t->ndim; d++)
            if (!check_expr(V, t->shape[d])) return false;
    }
    for (int i = 0; i < 3; i++) {
        if (f->grid_dim[i] && !check_expr(V, f->grid_dim[i])) return false;
        if (f->block_dim[i] && !check_expr(V, f->block_dim[i])) return false;
    }
    return true;
}

hc_status hc_verify_func(const hc_func *f, bool allow_task_level, hc_error *err) {
    HC_ASSERT(f);
    verifier V = {.f = f, .task_level = allow_task_level, .err = err};
    bool ok = check_params(&V, f);
    if (ok && !f->body) ok = fail(&V, "malformed function", "no body");
    ok = ok && check_stmt(&V, f->body);
    free(V.slots);
    hc_vec_free(&V.scope);
    return ok ? HC_OK : HC_ERR_INVALID;
}

hc_status hc_verify_module(const hc_module *m, hc_error *err) {
    for (int i = 0; i < m->nfuncs; i++) {
        for (int j = 0; j < i; j++)
            if (!strcmp(m->funcs[i]->name, m->funcs[j]->name))
                return hc_error_set(err, HC_ERR_INVALID, "verify: module '%s': function '%s' "
                                    "defined twice", m->name, m->funcs[i]->name);
        hc_status st = hc_verify_func(m->funcs[i], false, err);
        if (st != HC_OK) return st;
    }
    return HC_OK;
}
