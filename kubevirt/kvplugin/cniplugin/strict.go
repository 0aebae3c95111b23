//go:build linux

package cniplugin

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
)

// The network configuration is decoded strictly, because Go's
// encoding/json matches keys without regard to case, lets a repeated key
// override the first and drops unknown keys: a misspelt "port" would
// forward every port of the VM, "Ports" or a second "Binding" would be
// taken silently. So before decoding, every object of the configuration
// is walked: a key repeated in one object (exactly or in another case) is
// refused, and in the objects this plugin defines (the top level and each
// of "ports") every key must be one of the known ones, spelt exactly.
// Unknown keys are refused rather than warned about: a warning goes to a
// log nobody reads while the VM runs with every port open. Objects the
// runtime or other plugins own ("args" besides args.cni.logicNetworkName,
// "prevResult", "runtimeConfig", "ipam", "dns", "capabilities") are only
// checked for repeated keys.

// topKeys are the keys of the configuration: CNI's and this plugin's.
var topKeys = []string{
	// CNI's (types.PluginConf), and what libcni and Multus inject.
	"cniVersion", "name", "type", "capabilities", "ipam", "dns", "prevResult", "runtimeConfig", "args",
	"cni.dev/valid-attachments", "cni.dev/attachments",
	// This plugin's.
	"binding", "cacheDir", "ports", "vmNetworkCIDR", "vmIPv6NetworkCIDR", "logLevel", "tapOwner",
}

// portKeys are the keys of one item of "ports".
var portKeys = []string{"name", "port", "protocol"}

// checkKeys refuses repeated keys anywhere in data and unknown or
// miscased keys at the top level and in "ports".
func checkKeys(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := walk(dec, "", topKeys, nil); err != nil {
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("trailing data after the configuration")
	}
	return nil
}

// walk reads one value; when it is an object and known is not nil, its
// keys must be in known; when itemKeys is not nil, it must be a list whose
// items are objects of those keys. path names the value in errors ("" for
// the top).
func walk(dec *json.Decoder, path string, known, itemKeys []string) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if itemKeys != nil && tok != json.Delim('[') {
		return fmt.Errorf("%q is not a list", path)
	}
	switch tok {
	case json.Delim('{'):
		seen := map[string]string{}
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return err
			}
			key := kt.(string)
			at := key
			if path != "" {
				at = path + "." + key
			}
			if prev, ok := seen[strings.ToLower(key)]; ok {
				if prev == key {
					return fmt.Errorf("key %q appears twice", at)
				}
				return fmt.Errorf("keys %q and %q differ only in case", prev, at)
			}
			seen[strings.ToLower(key)] = at
			if known != nil && !slices.Contains(known, key) {
				if i := slices.IndexFunc(known, func(k string) bool { return strings.EqualFold(k, key) }); i >= 0 {
					return fmt.Errorf("unknown key %q (keys are case-sensitive: did you mean %q?)", at, known[i])
				}
				return fmt.Errorf("unknown key %q", at)
			}
			var items []string
			if path == "" && key == "ports" {
				items = portKeys
			}
			if err := walk(dec, at, nil, items); err != nil {
				return err
			}
		}
		_, err := dec.Token() // '}'
		return err
	case json.Delim('['):
		for i := 0; dec.More(); i++ {
			if err := walk(dec, fmt.Sprintf("%s[%d]", path, i), itemKeys, nil); err != nil {
				return err
			}
		}
		_, err := dec.Token() // ']'
		return err
	}
	return nil
}
