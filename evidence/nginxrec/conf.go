package nginxrec

import "strconv"

// WorkerProcesses reads the worker_processes directive of an nginx.conf's main context
// (https://nginx.org/en/docs/ngx_core_module.html#worker_processes): n is its number, 1 when the main context does
// not set it (nginx's default) and includes no other file. ok is false when the file does not tell: "auto" (one per
// CPU of the host that ran it), a main-context include (the directive may be there), a value that is not a positive
// number, or text that does not parse as nginx's configuration syntax (an unclosed quote or block). Comments (#) and
// quoted strings are skipped as nginx's own parser does (src/core/ngx_conf_file.c ngx_conf_read_token).
func WorkerProcesses(conf []byte) (n int, ok bool) {
	var (
		words    []string // the directive being read
		word     []byte
		inWord   bool
		depth    int
		quote    byte
		included bool
		value    string
		found    bool
	)
	endWord := func() {
		if inWord {
			words = append(words, string(word))
			word, inWord = word[:0], false
		}
	}
	for i := 0; i < len(conf); i++ {
		c := conf[i]
		if quote != 0 {
			switch {
			case c == '\\' && i+1 < len(conf):
				i++
				word = append(word, conf[i])
			case c == quote:
				quote = 0
			default:
				word = append(word, c)
			}
			continue
		}
		switch c {
		case '#':
			endWord()
			for i < len(conf) && conf[i] != '\n' {
				i++
			}
		case ' ', '\t', '\r', '\n':
			endWord()
		case '"', '\'':
			inWord, quote = true, c
		case ';':
			endWord()
			if depth == 0 && len(words) > 0 {
				switch words[0] {
				case "worker_processes":
					if len(words) != 2 {
						return 0, false
					}
					value, found = words[1], true
				case "include":
					included = true
				}
			}
			words = words[:0]
		case '{':
			endWord()
			depth++
			words = words[:0]
		case '}':
			endWord()
			if depth == 0 {
				return 0, false
			}
			depth--
			words = words[:0]
		default:
			inWord = true
			word = append(word, c)
		}
	}
	if quote != 0 || depth != 0 {
		return 0, false
	}
	if !found {
		if included {
			return 0, false
		}
		return 1, true
	}
	v, err := strconv.Atoi(value)
	if err != nil || v <= 0 {
		return 0, false
	}
	return v, true
}
