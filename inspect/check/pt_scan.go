package check

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strconv"
)

// scanPickleGlobals walks a pickle's opcodes without building anything
// (as Python's pickletools.genops does) and returns every global it names,
// "module.name", in first-use order: GLOBAL and INST carry the names inline;
// STACK_GLOBAL takes them from the two values pushed just before it, which
// torch.save and Python's pickler always emit as string literals or memo
// gets of them. A STACK_GLOBAL whose names are not such strings, an
// extension-registry opcode (EXT1/2/4), an unknown opcode or a truncated
// stream is an error: the caller then refuses the file, so nothing the
// scanner cannot name is ever built. So is a number literal longer than
// 4096 bits (decimal text is parsed in quadratic time).
func scanPickleGlobals(data []byte) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	record := func(g string) {
		if !seen[g] {
			seen[g] = true
			out = append(out, g)
		}
	}
	memo := map[int]*string{}
	var recent [2]*string // the last two values pushed; nil when not a string
	push := func(s *string) { recent[0], recent[1] = recent[1], s }
	pos := 0
	need := func(n int) ([]byte, error) {
		if n < 0 || pos+n > len(data) {
			return nil, fmt.Errorf("pickle truncated at byte %d", pos)
		}
		b := data[pos : pos+n]
		pos += n
		return b, nil
	}
	line := func() (string, error) {
		i := bytes.IndexByte(data[pos:], '\n')
		if i < 0 {
			return "", fmt.Errorf("pickle truncated at byte %d (no newline)", pos)
		}
		s := string(data[pos : pos+i])
		pos += i + 1
		return s, nil
	}
	lenArg := func(width int) (int, error) {
		b, err := need(width)
		if err != nil {
			return 0, err
		}
		var n uint64
		switch width {
		case 1:
			n = uint64(b[0])
		case 4:
			n = uint64(binary.LittleEndian.Uint32(b))
		case 8:
			n = binary.LittleEndian.Uint64(b)
		}
		if n > uint64(len(data)) {
			return 0, fmt.Errorf("pickle length %d at byte %d exceeds the stream", n, pos)
		}
		return int(n), nil
	}
	str := func(width int) error {
		n, err := lenArg(width)
		if err != nil {
			return err
		}
		b, err := need(n)
		if err != nil {
			return err
		}
		s := string(b)
		push(&s)
		return nil
	}
	created := 0 // objects the opcodes create (MaxPickleObjects)
	frames := stackFrames{0}
	for pos < len(data) {
		op := data[pos]
		at := pos
		pos++
		if createsObject(op) {
			if created++; created > MaxPickleObjects {
				return out, limitErr("data.pkl creates more than %d objects (at byte %d of %d); the unpickler would hold them all", MaxPickleObjects, at, len(data))
			}
		}
		if err := frames.step(op); err != nil {
			return out, fmt.Errorf("%v at byte %d", err, at)
		}
		var err error
		switch op {
		case '.': // STOP
			return out, nil
		case '(', '0', '1', '2', 'a', 'b', 'd', 'e', 'l', 's', 'u', 't', 'R', 'o', 0x81, 0x85, 0x86, 0x87,
			'Q', 0x90, 0x91, 0x92, 0x97, 0x98:
			push(nil) // value-producing or stack-reshaping: the top is no longer a known string
		case 'N', '}', ']', ')', 0x88, 0x89, 0x8f:
			push(nil)
		case 0x94: // MEMOIZE
			memo[len(memo)] = recent[1]
		case 'K', 0x80: // BININT1, PROTO
			_, err = need(1)
			push(nil)
		case 'M':
			_, err = need(2)
			push(nil)
		case 'J':
			_, err = need(4)
			push(nil)
		case 'G':
			_, err = need(8)
			push(nil)
		case 0x95: // FRAME: its length, then the frame's opcodes inline
			_, err = lenArg(8) // a frame longer than the stream would make the unpickler allocate it
		case 'h', 'j', 'q', 'r': // BINGET, LONG_BINGET, BINPUT, LONG_BINPUT
			w := 1
			if op == 'j' || op == 'r' {
				w = 4
			}
			var b []byte
			if b, err = need(w); err == nil {
				idx := int(b[0])
				if w == 4 {
					idx = int(binary.LittleEndian.Uint32(b))
				}
				if op == 'h' || op == 'j' {
					push(memo[idx])
				} else {
					memo[idx] = recent[1]
				}
			}
		case 'g', 'p': // GET, PUT with a decimal line
			var s string
			if s, err = line(); err == nil {
				idx, _ := strconv.Atoi(s)
				if op == 'g' {
					push(memo[idx])
				} else {
					memo[idx] = recent[1]
				}
			}
		case 'I', 'L', 'F', 'P':
			var s string
			if s, err = line(); err == nil && op != 'P' && len(s) > 1300 {
				// Go's big.Int parses decimal text in quadratic time: a
				// number of a million digits would stall the unpickler.
				err = fmt.Errorf("a number literal of %d characters at byte %d (at most 1300)", len(s), at)
			}
			push(nil)
		case 'S', 'V': // STRING, UNICODE: a line
			var s string
			if s, err = line(); err == nil {
				push(&s)
			}
		case 'c', 'i': // GLOBAL, INST: module and name lines
			var m, n string
			if m, err = line(); err == nil {
				if n, err = line(); err == nil {
					record(m + "." + n)
				}
			}
			push(nil)
		case 0x93: // STACK_GLOBAL
			if recent[0] == nil || recent[1] == nil {
				return out, fmt.Errorf("STACK_GLOBAL at byte %d takes its names from values that are not string literals", at)
			}
			record(*recent[0] + "." + *recent[1])
			push(nil)
		case 'U', 'C', 0x8c: // SHORT_BINSTRING, SHORT_BINBYTES, SHORT_BINUNICODE
			err = str(1)
		case 'T', 'B', 'X': // BINSTRING, BINBYTES, BINUNICODE
			err = str(4)
		case 0x8d, 0x8e, 0x96: // BINUNICODE8, BINBYTES8, BYTEARRAY8
			err = str(8)
		case 0x8a: // LONG1
			var n int
			if n, err = lenArg(1); err == nil {
				_, err = need(n)
			}
			push(nil)
		case 0x8b: // LONG4
			var n int
			if n, err = lenArg(4); err == nil {
				if n > 512 {
					err = fmt.Errorf("LONG4 of %d bytes at byte %d (at most 512: 4096 bits)", n, at)
				} else {
					_, err = need(n)
				}
			}
			push(nil)
		case 0x82, 0x83, 0x84:
			return out, fmt.Errorf("extension-registry opcode 0x%02x at byte %d names a global hsdb cannot see", op, at)
		default:
			return out, fmt.Errorf("unknown pickle opcode 0x%02x at byte %d", op, at)
		}
		if err != nil {
			return out, err
		}
	}
	return out, fmt.Errorf("pickle ends without STOP")
}

// createsObject reports whether pickle opcode op makes a new object: a
// literal, an empty or built container, a global, or a call's result
// (REDUCE, NEWOBJ, OBJ, INST, BINPERSID, PERSID). Memo gets, DUP, MARK,
// POP, the opcodes that fill a container in place (APPEND(S),
// SETITEM(S), ADDITEMS, BUILD) and framing create none.
func createsObject(op byte) bool {
	switch op {
	case 'N', 0x88, 0x89, // None, True, False
		'I', 'J', 'K', 'M', 'L', 0x8a, 0x8b, 'F', 'G', // numbers
		'S', 'T', 'U', 'V', 'X', 'B', 'C', 0x8c, 0x8d, 0x8e, 0x96, // strings, bytes, bytearray
		')', ']', '}', 0x8f, // empty tuple, list, dict, set
		't', 'l', 'd', 0x85, 0x86, 0x87, 0x91, // built tuple, list, dict, frozenset
		'c', 0x93, 'R', 0x81, 0x92, 'o', 'i', 'Q', 'P', 0x97, 0x98: // globals, calls, persistent ids, buffers
		return true
	}
	return false
}

// stackFrames models the unpickler's stack as Python's does it: MARK starts
// a new frame, the opcodes that pop to the mark (TUPLE, LIST, DICT,
// APPENDS, SETITEMS, ...) take the current frame whole. Each entry is how
// many values a frame holds. The model serves to refuse DICT and SETITEMS
// over an odd number of values (a key without its value), which Python
// refuses and on which gopickle indexed past the end of its slice (a
// recovered panic, not an error it checks); other faults (popping an
// empty frame, a MARK never closed) are left to the unpickler, which
// reports them.
type stackFrames []int

// step applies opcode op's stack effect; an error names what is wrong.
func (f *stackFrames) step(op byte) error {
	s := *f
	cur := &s[len(s)-1]
	pop := func(n int) { *cur = max(*cur-n, 0) }
	switch op {
	case '(': // MARK
		*f = append(s, 0)
		return nil
	case 'd', 'u': // DICT, SETITEMS: key, value pairs down to the mark
		if *cur%2 != 0 {
			name := map[byte]string{'d': "DICT", 'u': "SETITEMS"}[op]
			return fmt.Errorf("%s over %d values (a key without its value)", name, *cur)
		}
		fallthrough
	case 't', 'l', 'e', 'o', 'i', 0x90, 0x91, '1': // to the mark
		if len(s) > 1 {
			*f = s[:len(s)-1]
		} else {
			*cur = 0
		}
		s = *f
		cur = &s[len(s)-1]
		switch op {
		case 't', 'l', 'd', 'o', 'i', 0x91: // a new object on the frame below
			*cur++
		}
		return nil
	}
	switch {
	case createsObject(op) && op != 'Q' && op != 0x98:
		switch op { // the values a creating opcode takes
		case 0x85, 'R', 0x81, 0x93, 0x86, 0x87, 0x92:
			pop(map[byte]int{0x85: 1, 'R': 2, 0x81: 2, 0x93: 2, 0x86: 2, 0x87: 3, 0x92: 3}[op])
		}
		*cur++
	case op == 'g' || op == 'h' || op == 'j' || op == '2': // GET, DUP
		*cur++
	case op == '0' || op == 'a' || op == 'b': // POP, APPEND, BUILD
		pop(1)
	case op == 's': // SETITEM
		pop(2)
	}
	return nil // BINPERSID and READONLY_BUFFER replace the top; memo and framing opcodes leave the stack as it is
}
