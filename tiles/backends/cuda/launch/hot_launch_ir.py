"""The native code of ``hot_launch.py``'s builtin: LLVM IR text and the layout of its constants.

``tiles_hot_launch(self, args, nargs, kwnames)`` (``METH_FASTCALL | METH_KEYWORDS``; what it does:
``hot_launch``'s docstring) is compiled into one module with ``direct_launch.ir()``, whose
``tiles_direct_launch`` it calls.  Its ``self`` is a ``bytes`` of constants: ``HEADER_FIELDS`` (u64
words: object addresses, counts, the registry's state), then the names (the kernel's parameters,
then ``OPTIONS``), then one ``RECORD`` per parameter, then one ``GUARD`` per module global the
kernel's code baked in (``runtime/global_guards.py``: that global's namespace dict, name and
value, compared by identity; ``GUARDS_AT`` is the table's offset).  ``ir()`` substitutes the offsets.
"""

from __future__ import annotations

from ...launch_facts import LAUNCH_OPTIONS, Alignment, ArgKind, IntClass
from . import direct_launch, trampoline
from .capi import OBJECT, Layout, declarations, fill, symbols, table

OPTIONS = LAUNCH_OPTIONS  # bound after the kernel's parameters; ``warmup`` first (read at the options' slot 0)
assert OPTIONS[0] == "warmup"

HEADER_FIELDS = ("DIRECT", "NEXT_CELL", "FALLBACK", "COMPILED", "FAILED", "NPARAMS", "NNAMES", "NONE", "FALSE",
                  "INT_TYPE", "FLOAT_TYPE", "STR_TYPE", "DTYPE_NAME", "DTYPE_DESCR", "DTYPE_GET", "DATA_PTR",
                  "GET_DEVICE", "NUM_WARPS_NAME", "NUM_STAGES_NAME", "NUM_WARPS", "NUM_STAGES", "TUPLE_TYPE",
                  "BACKEND_MODE", "BACKEND", "GENERATION_AT", "GENERATION", "ENVIRON", "ENV_KEY0", "ENV_VALUE0",
                  "ENV_KEY1", "ENV_VALUE1", "NGUARDS", "GUARDS_AT")
HEADER = Layout([(name, "Q") for name in HEADER_FIELDS])
# per parameter: its ArgKind, type, object, expect, default (0: required), Alignment
RECORD = Layout((("KIND", "Q"), ("TYPE", "Q"), ("OBJECT", "Q"), ("EXPECT", "q"), ("DEFAULT", "Q"),
                 ("ALIGNMENT", "Q")), prefix="R_")
# per module global the code baked in: its namespace dict, its name, the value the code was compiled with
GUARD = Layout((("NAMESPACE", "Q"), ("NAME", "Q"), ("VALUE", "Q")), prefix="G_")
# the words of launch_facts.py, as the IR spells them
_FACTS = {**{f"$ARG_{k.name}": int(k) for k in ArgKind}, **{f"$ALIGN_{a.name}": int(a) for a in Alignment},
          **{f"$OPT_{o.upper()}": i for i, o in enumerate(OPTIONS)}}
OFFSETS = table(HEADER.offsets, {"$NAMES": HEADER.size}, RECORD.offsets, {"$R_SIZE": RECORD.size}, GUARD.offsets,
                {"$G_SIZE": GUARD.size}, OBJECT, trampoline.STATUS, _FACTS)
# the test that puts an int argument in each IntClass (bit ``IntClass`` of the mask ``%classes``)
_CLASS_TESTS = {IntClass.I32_ONE: "%is_one", IntClass.I32_DIV16: "%c1", IntClass.I32_OTHER: "%c2",
                IntClass.I32_ANY: "%in32", IntClass.I64_DIV16: "%c4", IntClass.I64_OTHER: "%c5",
                IntClass.I64_ANY: "%out32"}
# the options a hot launch takes only when absent or None: (the IR's name for it, its OPT_ word)
_UNSET_OPTIONS = (("warps", "NUM_WARPS"), ("stages", "NUM_STAGES"), ("debug", "DEBUG"))

_API = ("PyObject_GetAttr", "PyObject_Vectorcall", "PyLong_AsLongLongAndOverflow", "PyDict_GetItemWithError",
        "PyObject_RichCompareBool", "Py_IncRef", "PyObject_CallFunctionObjArgs", "PyCallable_Check",
        "llvm.memcpy.p0.p0.i64", "PyDict_New", "PyDict_SetItem")
IR = """
$DECLARATIONS

define ptr @tiles_hot_launch(ptr %self, ptr %args, i64 %nargs, ptr %kwnames) {
entry:
  %c = call ptr @PyBytes_AsString(ptr %self)
  %nparams = read i64 from %c at $NPARAMS
  %nnames = read i64 from %c at $NNAMES
  %none = read ptr from %c at $NONE
  %slots = alloca ptr, i64 %nnames, align 8
  %slots_size = shl i64 %nnames, 3
  call void @llvm.memset.p0.i64(ptr align 8 %slots, i8 0, i64 %slots_size, i1 false)
  %nvalues = add i64 %nparams, 2
  %values = alloca ptr, i64 %nvalues, align 8
  %temps = alloca ptr, i64 %nvalues, align 8
  %originals = alloca ptr, i64 %nvalues, align 8
  %temps_size = shl i64 %nvalues, 3
  call void @llvm.memset.p0.i64(ptr align 8 %temps, i8 0, i64 %temps_size, i1 false)
  %receiver = alloca ptr, align 8
  %overflow = alloca i32, align 4
  %names = getelementptr i8, ptr %c, i64 $NAMES
  %records_offset = shl i64 %nnames, 3
  %records = getelementptr i8, ptr %names, i64 %records_offset
  %npos = sub i64 %nargs, 1
  %has_grid = icmp sge i64 %nargs, 1
  %few = icmp sle i64 %npos, %nparams
  %shape_ok = and i1 %has_grid, %few
  %enabled_cell = read ptr from %c at $NEXT_CELL
  %enabled = read i64 from %enabled_cell at [1]
  %serving = icmp ne i64 %enabled, 0
  %may_serve = and i1 %shape_ok, %serving
  br i1 %may_serve, label %grid_kind, label %fallback
grid_kind:
  %grid = load ptr, ptr %args
  %grid_type = read ptr from %grid at $OB_TYPE
  %tuple_type = read ptr from %c at $TUPLE_TYPE
  %grid_is_tuple = icmp eq ptr %grid_type, %tuple_type
  br i1 %grid_is_tuple, label %positional, label %grid_callable
grid_callable:
  %callable = call i32 @PyCallable_Check(ptr %grid)
  %is_callable = icmp ne i32 %callable, 0
  br i1 %is_callable, label %positional, label %fallback

positional:
  %pi = phi i64 [ 0, %grid_kind ], [ 0, %grid_callable ], [ %pi_next, %positional_store ]
  %pmore = icmp slt i64 %pi, %npos
  br i1 %pmore, label %positional_store, label %keywords
positional_store:
  %parg_index = add i64 %pi, 1
  %parg = read ptr from %args at [%parg_index]
  %pslot = getelementptr ptr, ptr %slots, i64 %pi
  store ptr %parg, ptr %pslot
  %pi_next = add i64 %pi, 1
  br label %positional

keywords:
  %no_keywords = icmp eq ptr %kwnames, null
  br i1 %no_keywords, label %options, label %keywords_count
keywords_count:
  %nkw = read i64 from %kwnames at $TUPLE_SIZE
  br label %keyword
keyword:
  %k = phi i64 [ 0, %keywords_count ], [ %k_next, %keyword_stored ]
  %kmore = icmp slt i64 %k, %nkw
  br i1 %kmore, label %keyword_name, label %options
keyword_name:
  %kname_offset = shl i64 %k, 3
  %kname_index = add i64 %kname_offset, $TUPLE_ITEMS
  %kname = read ptr from %kwnames at %kname_index
  %kvalue_index = add i64 %nargs, %k
  %kvalue = read ptr from %args at [%kvalue_index]
  br label %match
match:
  %j = phi i64 [ 0, %keyword_name ], [ %j_next, %match_next ]
  %jmore = icmp slt i64 %j, %nnames
  br i1 %jmore, label %match_test, label %fallback
match_test:
  %jname = read ptr from %names at [%j]
  %matched = icmp eq ptr %jname, %kname
  br i1 %matched, label %keyword_slot, label %match_next
match_next:
  %j_next = add i64 %j, 1
  br label %match
keyword_slot:
  %kslot = getelementptr ptr, ptr %slots, i64 %j
  %kold = load ptr, ptr %kslot
  %ktaken = icmp ne ptr %kold, null
  br i1 %ktaken, label %fallback, label %keyword_store
keyword_store:
  store ptr %kvalue, ptr %kslot
  br label %keyword_stored
keyword_stored:
  %k_next = add i64 %k, 1
  br label %keyword

options:
  %option_slots = getelementptr ptr, ptr %slots, i64 %nparams
  %warmup = load ptr, ptr %option_slots
  %false = read ptr from %c at $FALSE
  %warmup_absent = icmp eq ptr %warmup, null
  %warmup_false = icmp eq ptr %warmup, %false
  %warmup_ok = or i1 %warmup_absent, %warmup_false
$UNSET_OPTIONS  %options_ok1 = and i1 %warmup_ok, %warps_ok
  %options_ok2 = and i1 %options_ok1, %stages_ok
  %options_ok3 = and i1 %options_ok2, %debug_ok
  %stream_at = getelementptr ptr, ptr %option_slots, i64 $OPT_STREAM
  %stream_given = load ptr, ptr %stream_at
  %stream_absent = icmp eq ptr %stream_given, null
  %stream = select i1 %stream_absent, ptr %none, ptr %stream_given
  %stream_type = read ptr from %stream at $OB_TYPE
  %stream_int_type = read ptr from %c at $INT_TYPE
  %stream_none = icmp eq ptr %stream, %none
  %stream_int = icmp eq ptr %stream_type, %stream_int_type
  %stream_ok = or i1 %stream_none, %stream_int
  %options_ok = and i1 %options_ok3, %stream_ok
  %backend_at = getelementptr ptr, ptr %option_slots, i64 $OPT_BACKEND
  %backend_given = load ptr, ptr %backend_at
  %backend_absent = icmp eq ptr %backend_given, null
  %backend = select i1 %backend_absent, ptr %none, ptr %backend_given
  br i1 %options_ok, label %backend_check, label %fallback

backend_check:
  %mode = read i64 from %c at $BACKEND_MODE
  %expected_backend = read ptr from %c at $BACKEND
  %by_registry = icmp eq i64 %mode, 0
  br i1 %by_registry, label %registry_check, label %given_backend
given_backend:
  %same_backend = icmp eq ptr %backend, %expected_backend
  br i1 %same_backend, label %guards, label %given_backend_str
given_backend_str:
  %str_type = read ptr from %c at $STR_TYPE
  %backend_type = read ptr from %backend at $OB_TYPE
  %expected_type = read ptr from %expected_backend at $OB_TYPE
  %backend_str = icmp eq ptr %backend_type, %str_type
  %expected_str = icmp eq ptr %expected_type, %str_type
  %both_str = and i1 %backend_str, %expected_str
  br i1 %both_str, label %given_backend_equal, label %fallback
given_backend_equal:
  %backend_equal = call i32 @PyObject_RichCompareBool(ptr %backend, ptr %expected_backend, i32 2)
  %backend_equal_ok = icmp eq i32 %backend_equal, 1
  br i1 %backend_equal_ok, label %guards, label %fallback
registry_check:
  %backend_is_none = icmp eq ptr %backend, %none
  %generation_at = read ptr from %c at $GENERATION_AT
  %generation = load volatile i64, ptr %generation_at
  %expected_generation = read i64 from %c at $GENERATION
  %same_generation = icmp eq i64 %generation, %expected_generation
  %registry_ok = and i1 %backend_is_none, %same_generation
  br i1 %registry_ok, label %environ_check, label %fallback
environ_check:
  %environ = read ptr from %c at $ENVIRON
  %no_environ = icmp eq ptr %environ, null
  br i1 %no_environ, label %guards, label %environ_first
environ_first:
  %key0 = read ptr from %c at $ENV_KEY0
  %value0 = call ptr @PyDict_GetItemWithError(ptr %environ, ptr %key0)
  %expected0 = read ptr from %c at $ENV_VALUE0
  %same0 = icmp eq ptr %value0, %expected0
  br i1 %same0, label %environ_second, label %clear_fallback
environ_second:
  %key1 = read ptr from %c at $ENV_KEY1
  %value1 = call ptr @PyDict_GetItemWithError(ptr %environ, ptr %key1)
  %expected1 = read ptr from %c at $ENV_VALUE1
  %same1 = icmp eq ptr %value1, %expected1
  br i1 %same1, label %guards, label %clear_fallback

guards:
  %nguards = read i64 from %c at $NGUARDS
  %guards_at = read i64 from %c at $GUARDS_AT
  %guard_table = getelementptr i8, ptr %c, i64 %guards_at
  br label %guard_loop
guard_loop:
  %g = phi i64 [ 0, %guards ], [ %g_next, %guard ]
  %gmore = icmp slt i64 %g, %nguards
  br i1 %gmore, label %guard, label %params
guard:
  %guard_offset = mul i64 %g, $G_SIZE
  %guard_record = getelementptr i8, ptr %guard_table, i64 %guard_offset
  %guard_dict = load ptr, ptr %guard_record
  %guard_key = read ptr from %guard_record at $G_NAME
  %guard_value = read ptr from %guard_record at $G_VALUE
  %guard_now = call ptr @PyDict_GetItemWithError(ptr %guard_dict, ptr %guard_key)
  %guard_same = icmp eq ptr %guard_now, %guard_value
  %g_next = add i64 %g, 1
  br i1 %guard_same, label %guard_loop, label %clear_fallback

params:
  %i = phi i64 [ 0, %guard_loop ], [ %i_next, %param_done ]
  %imore = icmp slt i64 %i, %nparams
  br i1 %imore, label %param, label %tensors
param:
  %record_offset = mul i64 %i, $R_SIZE
  %record = getelementptr i8, ptr %records, i64 %record_offset
  %kind = load i64, ptr %record
  %rtype = read ptr from %record at $R_TYPE
  %robject = read ptr from %record at $R_OBJECT
  %rexpect = read i64 from %record at $R_EXPECT
  %rdefault = read ptr from %record at $R_DEFAULT
  %ralign = read i64 from %record at $R_ALIGNMENT
  %given = read ptr from %slots at [%i]
  %absent = icmp eq ptr %given, null
  %object = select i1 %absent, ptr %rdefault, ptr %given
  %value_index = add i64 %i, 2
  %value_at = getelementptr ptr, ptr %values, i64 %value_index
  store ptr %object, ptr %value_at
  %original_at = getelementptr ptr, ptr %originals, i64 %i
  store ptr %object, ptr %original_at
  %missing = icmp eq ptr %object, null
  br i1 %missing, label %decline, label %param_kind
param_kind:
  %otype = read ptr from %object at $OB_TYPE
  switch i64 %kind, label %decline [ i64 $ARG_TENSOR, label %tensor
                                     i64 $ARG_INT, label %integer
                                     i64 $ARG_FLOAT, label %float
                                     i64 $ARG_NONE, label %none_value
                                     i64 $ARG_CONSTANT, label %constant ]
param_done:
  %i_next = add i64 %i, 1
  br label %params

tensor:
  %tensor_type_ok = icmp eq ptr %otype, %rtype
  br i1 %tensor_type_ok, label %param_done, label %decline
integer:
  %int_type = read ptr from %c at $INT_TYPE
  %is_int = icmp eq ptr %otype, %int_type
  br i1 %is_int, label %integer_value, label %decline
integer_value:
  store i32 0, ptr %overflow
  %v = call i64 @PyLong_AsLongLongAndOverflow(ptr %object, ptr %overflow)
  %overflowed = load i32, ptr %overflow
  %fits64 = icmp eq i32 %overflowed, 0
  br i1 %fits64, label %integer_class, label %clear_decline
integer_class:
  %above = icmp sge i64 %v, -2147483648
  %below = icmp sle i64 %v, 2147483647
  %in32 = and i1 %above, %below
  %out32 = xor i1 %in32, true
  %is_one = icmp eq i64 %v, 1
  %v_low = and i64 %v, 15
  %div16 = icmp eq i64 %v_low, 0
  %not_div16 = xor i1 %div16, true
  %not_one = xor i1 %is_one, true
  %c1 = and i1 %in32, %div16
  %c2a = and i1 %in32, %not_one
  %c2 = and i1 %c2a, %not_div16
  %c4 = and i1 %out32, %div16
  %c5 = and i1 %out32, %not_div16
$CLASS_MASK  %class_bit = lshr i64 %classes, %rexpect
  %class_one = and i64 %class_bit, 1
  %class_ok = icmp eq i64 %class_one, 1
  br i1 %class_ok, label %param_done, label %decline

float:
  %float_type = read ptr from %c at $FLOAT_TYPE
  %is_float = icmp eq ptr %otype, %float_type
  br i1 %is_float, label %param_done, label %decline

none_value:
  %is_none = icmp eq ptr %object, %none
  br i1 %is_none, label %param_done, label %decline

constant:
  %same_constant = icmp eq ptr %object, %robject
  br i1 %same_constant, label %param_done, label %constant_type
constant_type:
  %ctype = read ptr from %robject at $OB_TYPE
  %same_ctype = icmp eq ptr %otype, %ctype
  %cint = read ptr from %c at $INT_TYPE
  %cfloat = read ptr from %c at $FLOAT_TYPE
  %cstr = read ptr from %c at $STR_TYPE
  %is_cint = icmp eq ptr %ctype, %cint
  %is_cfloat = icmp eq ptr %ctype, %cfloat
  %is_cstr = icmp eq ptr %ctype, %cstr
  %plain1 = or i1 %is_cint, %is_cfloat
  %plain = or i1 %plain1, %is_cstr
  %comparable = and i1 %same_ctype, %plain
  br i1 %comparable, label %constant_equal, label %decline
constant_equal:
  %equal = call i32 @PyObject_RichCompareBool(ptr %object, ptr %robject, i32 2)
  %is_equal = icmp eq i32 %equal, 1
  br i1 %is_equal, label %param_done, label %clear_decline

tensors:
  %t = phi i64 [ 0, %params ], [ %t_next, %tensor_done ]
  %tmore = icmp slt i64 %t, %nparams
  br i1 %tmore, label %tensor_record, label %launch
tensor_record:
  %record_offset2 = mul i64 %t, $R_SIZE
  %record2 = getelementptr i8, ptr %records, i64 %record_offset2
  %kind2 = load i64, ptr %record2
  %is_tensor2 = icmp eq i64 %kind2, $ARG_TENSOR
  br i1 %is_tensor2, label %tensor_fields, label %tensor_done
tensor_fields:
  %robject2 = read ptr from %record2 at $R_OBJECT
  %rexpect2 = read i64 from %record2 at $R_EXPECT
  %ralign2 = read i64 from %record2 at $R_ALIGNMENT
  %object2 = read ptr from %originals at [%t]
  %otype2 = read ptr from %object2 at $OB_TYPE
  %value_index2 = add i64 %t, 2
  %value_at2 = getelementptr ptr, ptr %values, i64 %value_index2
  br label %tensor_dtype
tensor_done:
  %t_next = add i64 %t, 1
  br label %tensors

tensor_dtype:
  %dtype_get = read ptr from %c at $DTYPE_GET
  %by_descriptor = icmp ne ptr %dtype_get, null
  br i1 %by_descriptor, label %dtype_by_descriptor, label %dtype_by_name
dtype_by_descriptor:
  %dtype_descr = read ptr from %c at $DTYPE_DESCR
  %dtype_d = call ptr %dtype_get(ptr %dtype_descr, ptr %object2, ptr %otype2)
  br label %dtype_read
dtype_by_name:
  %dtype_name = read ptr from %c at $DTYPE_NAME
  %dtype_n = call ptr @PyObject_GetAttr(ptr %object2, ptr %dtype_name)
  br label %dtype_read
dtype_read:
  %dtype = phi ptr [ %dtype_d, %dtype_by_descriptor ], [ %dtype_n, %dtype_by_name ]
  %dtype_same = icmp eq ptr %dtype, %robject2
  call void @Py_DecRef(ptr %dtype)
  br i1 %dtype_same, label %tensor_device, label %clear_decline
tensor_device:
  store ptr %object2, ptr %receiver
  %get_device = read ptr from %c at $GET_DEVICE
  %device_object = call ptr @PyObject_Vectorcall(ptr %get_device, ptr %receiver, i64 1, ptr null)
  %device_missing = icmp eq ptr %device_object, null
  br i1 %device_missing, label %clear_decline, label %tensor_device_value
tensor_device_value:
  %device = call i64 @PyLong_AsLongLong(ptr %device_object)
  call void @Py_DecRef(ptr %device_object)
  %device_same = icmp eq i64 %device, %rexpect2
  %device_error_maybe = icmp eq i64 %device, -1
  br i1 %device_same, label %tensor_device_checked, label %clear_decline
tensor_device_checked:
  br i1 %device_error_maybe, label %tensor_device_error, label %tensor_address
tensor_device_error:
  br raised %device, label %clear_decline, label %tensor_address
tensor_address:
  %data_ptr = read ptr from %c at $DATA_PTR
  %address_object = call ptr @PyObject_Vectorcall(ptr %data_ptr, ptr %receiver, i64 1, ptr null)
  %address_missing = icmp eq ptr %address_object, null
  br i1 %address_missing, label %clear_decline, label %tensor_address_value
tensor_address_value:
  %temp_at = getelementptr ptr, ptr %temps, i64 %value_index2
  store ptr %address_object, ptr %temp_at
  store ptr %address_object, ptr %value_at2
  %address = call i64 @PyLong_AsUnsignedLongLong(ptr %address_object)
  br raised %address, label %clear_decline, label %tensor_alignment
tensor_alignment:
  %low_bits = and i64 %address, 15
  %aligned = icmp eq i64 %low_bits, 0
  %unaligned = icmp ne i64 %low_bits, 0
  %any_alignment = icmp eq i64 %ralign2, $ALIGN_ANY
  %want_aligned = icmp eq i64 %ralign2, $ALIGN_ALIGNED
  %want_unaligned = icmp eq i64 %ralign2, $ALIGN_UNALIGNED
  %aligned_ok = and i1 %want_aligned, %aligned
  %unaligned_ok = and i1 %want_unaligned, %unaligned
  %alignment_ok1 = or i1 %any_alignment, %aligned_ok
  %alignment_ok = or i1 %alignment_ok1, %unaligned_ok
  br i1 %alignment_ok, label %tensor_done, label %decline

launch:
  store ptr %stream, ptr %values
  br i1 %grid_is_tuple, label %call_direct, label %evaluate_grid
evaluate_grid:
  %meta = call ptr @PyDict_New()
  %no_meta = icmp eq ptr %meta, null
  br i1 %no_meta, label %raise, label %meta_item
meta_item:
  %mi = phi i64 [ 0, %evaluate_grid ], [ %mi_next, %meta_stored ]
  %mmore = icmp slt i64 %mi, %nparams
  br i1 %mmore, label %meta_store, label %meta_options
meta_store:
  %mname = read ptr from %names at [%mi]
  %mvalue = read ptr from %originals at [%mi]
  %mset = call i32 @PyDict_SetItem(ptr %meta, ptr %mname, ptr %mvalue)
  %mset_failed = icmp ne i32 %mset, 0
  br i1 %mset_failed, label %meta_failed, label %meta_stored
meta_stored:
  %mi_next = add i64 %mi, 1
  br label %meta_item
meta_options:
  %warps_name = read ptr from %c at $NUM_WARPS_NAME
  %warps_default = read ptr from %c at $NUM_WARPS
  %wset = call i32 @PyDict_SetItem(ptr %meta, ptr %warps_name, ptr %warps_default)
  %stages_name = read ptr from %c at $NUM_STAGES_NAME
  %stages_default = read ptr from %c at $NUM_STAGES
  %sset = call i32 @PyDict_SetItem(ptr %meta, ptr %stages_name, ptr %stages_default)
  %optset = or i32 %wset, %sset
  %optset_failed = icmp ne i32 %optset, 0
  br i1 %optset_failed, label %meta_failed, label %call_grid
meta_failed:
  call void @Py_DecRef(ptr %meta)
  br label %raise
call_grid:
  %evaluated = call ptr @PyObject_CallOneArg(ptr %grid, ptr %meta)
  call void @Py_DecRef(ptr %meta)
  %grid_raised = icmp eq ptr %evaluated, null
  br i1 %grid_raised, label %raise, label %call_direct
call_direct:
  %grid_value = phi ptr [ %grid, %launch ], [ %evaluated, %call_grid ]
  %owned_grid = phi ptr [ null, %launch ], [ %evaluated, %call_grid ]
  %grid_at = getelementptr ptr, ptr %values, i64 1
  store ptr %grid_value, ptr %grid_at
  %grid_temp_at = getelementptr ptr, ptr %temps, i64 1
  store ptr %owned_grid, ptr %grid_temp_at
  %direct = read ptr from %c at $DIRECT
  %answer = call ptr @tiles_direct_launch(ptr %direct, ptr %values, i64 %nvalues)
  %no_answer = icmp eq ptr %answer, null
  br i1 %no_answer, label %raise, label %read_status
read_status:
  %status = call i64 @PyLong_AsLongLong(ptr %answer)
  %launched = icmp eq i64 %status, 0
  br i1 %launched, label %done, label %not_launched
not_launched:
  %declined = icmp eq i64 %status, $STATUS_FALLBACK
  br i1 %declined, label %declined_by_direct, label %failed
declined_by_direct:
  call void @Py_DecRef(ptr %answer)
  br i1 %grid_is_tuple, label %decline, label %fallback_with_grid
fallback_with_grid:
  %has_kw = icmp ne ptr %kwnames, null
  br i1 %has_kw, label %count_kw, label %copy_args
count_kw:
  %kw_count = read i64 from %kwnames at $TUPLE_SIZE
  br label %copy_args
copy_args:
  %nkw_total = phi i64 [ 0, %fallback_with_grid ], [ %kw_count, %count_kw ]
  %ncopy = add i64 %nargs, %nkw_total
  %copied = alloca ptr, i64 %ncopy, align 8
  %copy_size = shl i64 %ncopy, 3
  call void @llvm.memcpy.p0.p0.i64(ptr align 8 %copied, ptr align 8 %args, i64 %copy_size, i1 false)
  store ptr %grid_value, ptr %copied
  %next_cell_g = read ptr from %c at $NEXT_CELL
  %next_g = load ptr, ptr %next_cell_g
  call void @Py_IncRef(ptr %next_g)
  %with_grid = call ptr @PyObject_Vectorcall(ptr %next_g, ptr %copied, i64 %nargs, ptr %kwnames)
  call void @Py_DecRef(ptr %next_g)
  call void @release(ptr %temps, i64 %nvalues)
  ret ptr %with_grid
failed:
  call void @release(ptr %temps, i64 %nvalues)
  %failed_fn = read ptr from %c at $FAILED
  %reported = call ptr (ptr, ...) @PyObject_CallFunctionObjArgs(ptr %failed_fn, ptr %answer, ptr %grid_value, ptr null)
  call void @Py_DecRef(ptr %answer)
  %report_raised = icmp eq ptr %reported, null
  br i1 %report_raised, label %return_null, label %report_returned
report_returned:
  call void @Py_DecRef(ptr %reported)
  br label %return_compiled
done:
  call void @Py_DecRef(ptr %answer)
  call void @release(ptr %temps, i64 %nvalues)
  br label %return_compiled
return_compiled:
  %compiled = read ptr from %c at $COMPILED
  call void @Py_IncRef(ptr %compiled)
  ret ptr %compiled
raise:
  call void @release(ptr %temps, i64 %nvalues)
  br label %return_null
return_null:
  ret ptr null

clear_decline:
  call void @PyErr_Clear()
  br label %decline
decline:
  call void @release(ptr %temps, i64 %nvalues)
  br label %fallback
clear_fallback:
  call void @PyErr_Clear()
  br label %fallback
fallback:
  %next_cell = read ptr from %c at $NEXT_CELL
  %next = load ptr, ptr %next_cell
  call void @Py_IncRef(ptr %next)
  %result = call ptr @PyObject_Vectorcall(ptr %next, ptr %args, i64 %nargs, ptr %kwnames)
  call void @Py_DecRef(ptr %next)
  ret ptr %result
}

define internal void @release(ptr %temps, i64 %count) {
entry:
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %next, %body ]
  %more = icmp slt i64 %i, %count
  br i1 %more, label %body, label %done
body:
  %at = getelementptr ptr, ptr %temps, i64 %i
  %object = load ptr, ptr %at
  call void @Py_DecRef(ptr %object)
  store ptr null, ptr %at
  %next = add i64 %i, 1
  br label %loop
done:
  ret void
}
"""

def _class_mask() -> str:
    """``%classes``: bit ``c`` set for each ``IntClass`` ``c`` the int argument is in (``_CLASS_TESTS``)."""
    lines = [f"  %b{int(c)} = zext i1 {_CLASS_TESTS[c]} to i64\n" for c in IntClass]
    lines += [f"  %s{int(c)} = shl i64 %b{int(c)}, {int(c)}\n" for c in IntClass if c]
    last = len(IntClass) - 1
    mask = "%b0"
    for c in range(1, last):
        lines.append(f"  %m{c} = or i64 {mask}, %s{c}\n")
        mask = f"%m{c}"
    lines.append(f"  %classes = or i64 {mask}, %s{last}\n")
    return "".join(lines)


def _unset_options() -> str:
    """``%<name>_ok`` for each of ``_UNSET_OPTIONS``: that option's slot is empty or holds None."""
    return "".join(f"  %{name} = read ptr from %option_slots at [$OPT_{option}]\n"
                   f"  %{name}_absent = icmp eq ptr %{name}, null\n"
                   f"  %{name}_none = icmp eq ptr %{name}, %none\n"
                   f"  %{name}_ok = or i1 %{name}_absent, %{name}_none\n" for name, option in _UNSET_OPTIONS)


PYTHON_SYMBOLS = symbols(_API)


def ir() -> str:
    """The module: ``direct_launch.ir()`` and ``tiles_hot_launch`` with the offsets filled in."""
    text = IR.replace("$DECLARATIONS\n", declarations(_API)).replace("$CLASS_MASK", _class_mask())
    text = text.replace("$UNSET_OPTIONS", _unset_options())
    return direct_launch.ir() + fill(text, OFFSETS)
