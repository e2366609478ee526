package supervisor

import (
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/corral-go/corral/internal/logfield"
)

// Fields is an [Event]'s fields as its log line writes them: for zap (a
// zapcore.ObjectMarshaler), for log/slog (a slog.LogValuer whose value is
// a group) and as a map. Corral logs every event through it; a hook logs
// an event the same way with
//
//	logger.Info(ev.Kind(), zap.Inline(supervisor.EventFields(ev)))
//	slogger.Info(ev.Kind(), slog.Any("", supervisor.EventFields(ev)))
//
// (an empty key inlines the group in slog; a key nests it).
//
// The fields are the event struct's exported fields, in order, but for
// [EventTime]: zap and slog stamp lines with their own time. The fields of
// an embedded struct of an exported type are the event's own, where it is
// embedded. A field's key is its Go name in snake case (ServerID is
// server_id, URLs is urls), but Err's is "error". A `log` struct tag
// changes that:
//
//   - `log:"name"` names the field;
//   - `log:",omitempty"` leaves the field out when it is empty (false, 0,
//     "", a nil pointer or interface, an empty slice or map, a zero struct);
//   - `log:",omitempty=Other"` leaves it out when the field Other of the
//     same struct is empty, so two fields go together (a stream and its
//     consumer); an Other that names no field is ignored;
//   - `log:"-"` leaves the field out.
//
// An error is written as its message, and a recovered panic's stack (an
// error, or one it wraps, with a Stacktrace() []byte method, as a
// [*PanicError]) beside it: its key is the error's with the suffix "error"
// replaced by "stack" ("stack", "publish_stack"), or else with "_stack"
// appended. A nil error is left out. A time.Duration is a duration, a
// time.Time a time, a type with a String method its String, a slice of
// strings a list. Strings, bools and numbers are written as such: an int
// or a uint with zap's AddInt or AddUint, other integers with AddInt64 or
// AddUint64, floats with AddFloat64 or AddFloat32. Other types are written
// as zap.Any and slog.Any write them. An Error or String method that
// panics is written as a note naming the type, and so is, for zap, a
// value whose encoding panics (slog's handlers have a note of their own):
// logging an event never panics.
//
// A Fields is a view of its event, and is safe for concurrent use as the
// event is. The zero value has no fields.
type Fields struct {
	ev Event
}

// EventFields returns the fields of ev. The layout of each event type is
// worked out once, by reflection, and kept for the life of the process,
// so that logging an event costs little more than a hand-written
// marshaller.
func EventFields(ev Event) Fields { return Fields{ev: ev} }

// MarshalLogObject adds the fields to a zap line; it never fails.
func (f Fields) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	v, p := f.layout()
	for i := range p {
		if fv, ok := p[i].value(v); ok {
			p[i].addTo(enc, fv)
		}
	}
	return nil
}

// LogValue returns the fields as a slog group, with the same keys and
// values as the zap line has.
func (f Fields) LogValue() slog.Value {
	v, p := f.layout()
	attrs := make([]slog.Attr, 0, len(p)+1)
	for i := range p {
		if fv, ok := p[i].value(v); ok {
			attrs = p[i].appendAttrs(attrs, fv)
		}
	}
	return slog.GroupValue(attrs...)
}

// Map returns the fields as a new map from key to value, the values as
// zap's MapObjectEncoder holds them: a string, a bool, an int, uint,
// int64, uint64, float64 or float32, an error's message and stack as
// strings, a time.Duration, a time.Time, a list as []any.
func (f Fields) Map() map[string]any {
	enc := zapcore.NewMapObjectEncoder()
	_ = f.MarshalLogObject(enc)
	return enc.Fields
}

// layout returns the event's struct value and the layout of its type;
// none for no event, or one that is a nil pointer.
func (f Fields) layout() (reflect.Value, layout) {
	if f.ev == nil {
		return reflect.Value{}, nil
	}
	v := reflect.ValueOf(f.ev)
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return reflect.Value{}, nil
		}
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return reflect.Value{}, nil
	}
	return v, layoutOf(v.Type())
}

// layout is the fields an event type's line writes, in order.
type layout []field

// layouts holds the layout of each event type met so far: a cache, which
// nothing outside layoutOf sees.
var layouts sync.Map // reflect.Type -> layout

func layoutOf(t reflect.Type) layout {
	if l, ok := layouts.Load(t); ok {
		return l.(layout)
	}
	l, _ := layouts.LoadOrStore(t, appendFields(nil, t, nil))
	return l.(layout)
}

var (
	eventTimeType = reflect.TypeFor[EventTime]()
	durationType  = reflect.TypeFor[time.Duration]()
	timeType      = reflect.TypeFor[time.Time]()
	errorType     = reflect.TypeFor[error]()
	stringerType  = reflect.TypeFor[fmt.Stringer]()
)

// encoding is how a field's value is written.
type encoding uint8

const (
	encAny encoding = iota
	encString
	encBool
	encInteger
	encFloat
	encDuration
	encTime
	encError
	encStringer
	encStrings
)

// field is one field of a layout.
type field struct {
	index     []int // of the field in the event struct, through embedded ones
	key       string
	stackKey  string // for an error, where its stack goes
	enc       encoding
	omitEmpty bool
	with      []int // the field whose emptiness leaves this one out, if any
}

// appendFields appends the fields of struct type t, found at index in the
// event, to fields.
func appendFields(fields layout, t reflect.Type, index []int) layout {
	for i := range t.NumField() {
		sf := t.Field(i)
		if !sf.IsExported() || sf.Type == eventTimeType {
			continue
		}
		tag := sf.Tag.Get("log")
		if tag == "-" {
			continue
		}
		at := append(slices.Clip(index), i)
		name, opts, _ := strings.Cut(tag, ",")
		if sf.Anonymous && sf.Type.Kind() == reflect.Struct && tag == "" {
			fields = appendFields(fields, sf.Type, at)
			continue
		}
		f := field{index: at, key: name, enc: encodingOf(sf.Type)}
		if f.key == "" {
			f.key = keyOf(sf.Name)
		}
		for opt := range strings.SplitSeq(opts, ",") {
			if opt == "omitempty" {
				f.omitEmpty = true
			} else if other, ok := strings.CutPrefix(opt, "omitempty="); ok {
				if of, ok := t.FieldByName(other); ok {
					f.with = append(slices.Clip(index), of.Index...)
				}
			}
		}
		if f.enc == encError {
			f.stackKey = stackKeyOf(f.key)
		}
		fields = append(fields, f)
	}
	return fields
}

func encodingOf(t reflect.Type) encoding {
	switch {
	case t.Implements(errorType):
		return encError
	case t == durationType:
		return encDuration
	case t == timeType:
		return encTime
	case t.Implements(stringerType):
		return encStringer
	}
	switch t.Kind() {
	case reflect.String:
		return encString
	case reflect.Bool:
		return encBool
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return encInteger
	case reflect.Float32, reflect.Float64:
		return encFloat
	case reflect.Slice:
		if e := t.Elem(); e.Kind() == reflect.String && !e.Implements(stringerType) && !e.Implements(errorType) {
			return encStrings
		}
	}
	return encAny
}

// keyOf is the key of the field named name: "error" for Err, else name
// in snake case.
func keyOf(name string) string {
	if name == "Err" {
		return "error"
	}
	var b strings.Builder
	r := []rune(name)
	for i, c := range r {
		if unicode.IsUpper(c) {
			if i > 0 && (!unicode.IsUpper(r[i-1]) || i+1 < len(r) && unicode.IsLower(r[i+1]) && !pluralEnd(r, i+1)) {
				b.WriteByte('_')
			}
			c = unicode.ToLower(c)
		}
		b.WriteRune(c)
	}
	return b.String()
}

// pluralEnd says whether r[i] is the lone "s" that ends a word, as in
// URLs or IDs: it belongs to the capitals before it.
func pluralEnd(r []rune, i int) bool {
	return r[i] == 's' && (i+1 == len(r) || unicode.IsUpper(r[i+1]))
}

// stackKeyOf is the key of the stack of the error written as key.
func stackKeyOf(key string) string {
	if base, ok := strings.CutSuffix(key, "error"); ok {
		return base + "stack"
	}
	return key + "_stack"
}

// value returns the field's value in the event v, and whether the line
// writes it.
func (f *field) value(v reflect.Value) (reflect.Value, bool) {
	fv := fieldAt(v, f.index)
	switch {
	case f.omitEmpty && empty(fv),
		f.with != nil && empty(fieldAt(v, f.with)),
		f.enc == encError && isNil(fv):
		return fv, false
	}
	return fv, true
}

func fieldAt(v reflect.Value, index []int) reflect.Value {
	if len(index) == 1 {
		return v.Field(index[0])
	}
	return v.FieldByIndex(index)
}

// empty says whether v is what omitempty leaves out.
func empty(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.String, reflect.Slice, reflect.Map, reflect.Array:
		return v.Len() == 0
	}
	return v.IsZero()
}

func isNil(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface, reflect.Map, reflect.Slice, reflect.Func, reflect.Chan:
		return v.IsNil()
	}
	return false
}

// addTo adds the field, of value v, to a zap line.
func (f *field) addTo(enc zapcore.ObjectEncoder, v reflect.Value) {
	switch f.enc {
	case encString:
		enc.AddString(f.key, v.String())
	case encBool:
		enc.AddBool(f.key, v.Bool())
	case encInteger:
		addInteger(enc, f.key, v)
	case encFloat:
		if v.Kind() == reflect.Float32 {
			enc.AddFloat32(f.key, float32(v.Float()))
		} else {
			enc.AddFloat64(f.key, v.Float())
		}
	case encDuration:
		enc.AddDuration(f.key, time.Duration(v.Int()))
	case encTime:
		t, _ := reflect.TypeAssert[time.Time](v)
		enc.AddTime(f.key, t)
	case encError:
		msg, stack := errorText(v)
		enc.AddString(f.key, msg)
		if stack != nil {
			enc.AddByteString(f.stackKey, stack)
		}
	case encStringer:
		enc.AddString(f.key, stringOf(v))
	case encStrings:
		_ = enc.AddArray(f.key, stringList{v})
	default:
		addAny(enc, f.key, v)
	}
}

// addInteger adds an integer as zap's AddInt, AddUint, AddInt64 or
// AddUint64, so that a zapcore.MapObjectEncoder holds an int as an int.
func addInteger(enc zapcore.ObjectEncoder, key string, v reflect.Value) {
	switch {
	case v.Kind() == reflect.Int:
		enc.AddInt(key, int(v.Int()))
	case v.Kind() == reflect.Uint:
		enc.AddUint(key, uint(v.Uint()))
	case v.CanInt():
		enc.AddInt64(key, v.Int())
	default:
		enc.AddUint64(key, v.Uint())
	}
}

// addAny adds a value of no type the layout knows as zap.Any would; if
// that panics (a MarshalJSON of the application's), a note says so.
func addAny(enc zapcore.ObjectEncoder, key string, v reflect.Value) {
	defer func() {
		if recover() != nil {
			enc.AddString(key, fmt.Sprintf("%s (logging it panicked)", v.Type()))
		}
	}()
	zap.Any(key, v.Interface()).AddTo(enc)
}

// stringList writes a slice of strings as a zap array.
type stringList struct{ v reflect.Value }

func (l stringList) MarshalLogArray(enc zapcore.ArrayEncoder) error {
	for i := range l.v.Len() {
		enc.AppendString(l.v.Index(i).String())
	}
	return nil
}

// appendAttrs appends the field, of value v, to attrs as slog attributes.
func (f *field) appendAttrs(attrs []slog.Attr, v reflect.Value) []slog.Attr {
	switch f.enc {
	case encString:
		return append(attrs, slog.String(f.key, v.String()))
	case encBool:
		return append(attrs, slog.Bool(f.key, v.Bool()))
	case encInteger:
		if v.CanInt() {
			return append(attrs, slog.Int64(f.key, v.Int()))
		}
		return append(attrs, slog.Uint64(f.key, v.Uint()))
	case encFloat:
		return append(attrs, slog.Float64(f.key, v.Float()))
	case encDuration:
		return append(attrs, slog.Duration(f.key, time.Duration(v.Int())))
	case encTime:
		t, _ := reflect.TypeAssert[time.Time](v)
		return append(attrs, slog.Time(f.key, t))
	case encError:
		msg, stack := errorText(v)
		attrs = append(attrs, slog.String(f.key, msg))
		if stack != nil {
			attrs = append(attrs, slog.String(f.stackKey, string(stack)))
		}
		return attrs
	case encStringer:
		return append(attrs, slog.String(f.key, stringOf(v)))
	case encStrings:
		list := make([]string, v.Len())
		for i := range list {
			list[i] = v.Index(i).String()
		}
		return append(attrs, slog.Any(f.key, list))
	}
	return append(attrs, slog.Any(f.key, v.Interface()))
}

// errorText returns the message of the error v holds, and the stack of
// a recovered panic it is or wraps, if any; neither panics.
func errorText(v reflect.Value) (msg string, stack []byte) {
	err, _ := reflect.TypeAssert[error](v)
	defer func() {
		if recover() != nil {
			stack = nil
		}
	}()
	msg = logfield.Text(err)
	var st interface{ Stacktrace() []byte }
	if errors.As(err, &st) {
		stack = st.Stacktrace()
	}
	return msg, stack
}

// stringOf returns the String of the fmt.Stringer v holds, or a note when
// it panics.
func stringOf(v reflect.Value) string {
	s, _ := reflect.TypeAssert[fmt.Stringer](v)
	return logfield.Safe(s, "String", func() string { return s.String() })
}
