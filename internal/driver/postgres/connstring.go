package postgres

import "strings"

// space is what separates the pairs of a connection string (C's isspace).
const space = " \t\n\v\f\r"

// Keyword is one keyword=value pair of a libpq connection string.
type Keyword struct{ Key, Value string }

// ParseKeywords reads a libpq keyword/value connection string ("host=db
// user=cks password='a b' dbname=cks"): pairs separated by spaces, a space
// allowed around "=", a value single-quoted when it holds spaces or is
// empty (\' and \\ escaped in it). ok is false for anything else — a
// URL, a file path — and for a string without a pair.
func ParseKeywords(s string) (kv []Keyword, ok bool) {
	rest := strings.Trim(s, space)
	for rest != "" {
		eq := strings.IndexByte(rest, '=')
		if eq <= 0 {
			return nil, false
		}
		key := strings.TrimRight(rest[:eq], space)
		if !isKeyword(key) {
			return nil, false
		}
		rest = strings.TrimLeft(rest[eq+1:], space)
		var val strings.Builder
		if strings.HasPrefix(rest, "'") {
			closed := false
			for i := 1; i < len(rest); i++ {
				switch c := rest[i]; {
				case c == '\\' && i+1 < len(rest):
					i++
					val.WriteByte(rest[i])
				case c == '\'':
					closed, rest = true, rest[i+1:]
				default:
					val.WriteByte(c)
				}
				if closed {
					break
				}
			}
			if !closed || rest != "" && !strings.ContainsAny(rest[:1], space) {
				return nil, false
			}
		} else {
			end := strings.IndexAny(rest, space)
			if end < 0 {
				end = len(rest)
			}
			val.WriteString(rest[:end])
			rest = rest[end:]
			if strings.Contains(val.String(), "=") {
				return nil, false
			}
		}
		kv = append(kv, Keyword{Key: key, Value: val.String()})
		rest = strings.TrimLeft(rest, space)
	}
	return kv, len(kv) > 0
}

// isKeyword reports whether s has the shape of a libpq keyword.
func isKeyword(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		if c != '_' && (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') && (i == 0 || c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// Keywords libpq knows, of which a connection string names at least one
// (a file path such as "a=b" names none).
var libpqKeywords = map[string]bool{
	"host": true, "hostaddr": true, "port": true, "dbname": true, "user": true, "password": true, "passfile": true,
	"connect_timeout": true, "client_encoding": true, "options": true, "application_name": true,
	"fallback_application_name": true, "keepalives": true, "sslmode": true, "sslcert": true, "sslkey": true,
	"sslrootcert": true, "sslpassword": true, "sslnegotiation": true, "target_session_attrs": true, "service": true,
	"channel_binding": true, "gssencmode": true, "krbsrvname": true, "load_balance_hosts": true,
}

// IsConnString reports whether s is a libpq keyword/value connection
// string: ParseKeywords reads it and it names a keyword libpq knows.
func IsConnString(s string) bool {
	kv, ok := ParseKeywords(s)
	if !ok {
		return false
	}
	for _, p := range kv {
		if libpqKeywords[strings.ToLower(p.Key)] {
			return true
		}
	}
	return false
}

// JoinKeywords writes kv as a connection string ParseKeywords reads back.
func JoinKeywords(kv []Keyword) string {
	parts := make([]string, len(kv))
	for i, p := range kv {
		v := p.Value
		if v == "" || strings.ContainsAny(v, space+"'\\=") {
			v = "'" + strings.NewReplacer("\\", "\\\\", "'", "\\'").Replace(v) + "'"
		}
		parts[i] = p.Key + "=" + v
	}
	return strings.Join(parts, " ")
}
