// Conformance harness: reads a JSON list of user data texts and prints, for each, what Karpenter 1.14's
// mime.NewArchive would return (the standard library calls it makes, in its order).
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/mail"
	"os"
	"strings"
)

type result struct {
	OK      bool        `json:"ok"`
	Entries [][2]string `json:"entries,omitempty"`
	Error   string      `json:"error,omitempty"`
}

func archive(content string) result {
	if content == "" {
		return result{OK: true}
	}
	msg, err := mail.ReadMessage(strings.NewReader(content))
	if err != nil {
		return result{Error: err.Error()}
	}
	mediaType, params, err := mime.ParseMediaType(msg.Header.Get("Content-Type"))
	if err != nil {
		return result{Error: err.Error()}
	}
	if !strings.HasPrefix(mediaType, "multipart/") {
		return result{Error: "not multipart"}
	}
	reader := multipart.NewReader(msg.Body, params["boundary"])
	out := result{OK: true, Entries: [][2]string{}}
	for {
		p, err := reader.NextPart()
		if err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return result{Error: fmt.Sprintf("parsing content, %v", err)}
		}
		slurp, err := io.ReadAll(p)
		if err != nil {
			return result{Error: fmt.Sprintf("parsing content, %v", err)}
		}
		out.Entries = append(out.Entries, [2]string{p.Header.Get("Content-Type"), string(slurp)})
	}
	return out
}

func main() {
	var inputs []string
	if err := json.NewDecoder(os.Stdin).Decode(&inputs); err != nil {
		panic(err)
	}
	results := make([]result, len(inputs))
	for i, in := range inputs {
		results[i] = archive(in)
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", " ")
	_ = enc.Encode(results)
}
