// Package goldentest checks the domain XML the binding renderers produce
// against golden files under testdata/<Test>/<case>.xml: the rendered
// domain is marshalled, compared with the file (or written to it with the
// test package's -update flag), validated with libvirt's
// virt-xml-validate against the domain schema, and round-tripped through
// libvirtxml Unmarshal and Marshal.
//
// virt-xml-validate comes with the Debian packages libvirt-clients and
// libxml2-utils; without it the validation step is skipped through
// testutil.Skip (a failure under VIRTNET_REQUIRE_KERNEL=1).
package goldentest
