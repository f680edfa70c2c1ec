/*
 * The files the HTML report inlines into its page, compiled into the
 * binary at build time (html/meson.build, html/embed_assets.c): the chart
 * libraries from node_modules/ (package.json) and the page's own script and
 * style (html/report.js, html/report.css).
 */
#ifndef VRAMTRACE_REPORT_HTML_ASSETS_H
#define VRAMTRACE_REPORT_HTML_ASSETS_H

#include <stddef.h>

struct vt_html_asset {
    const char *name;            /* "uPlot.iife.min.js", "report.js"... */
    const unsigned char *data;   /* size bytes, then a 0 */
    size_t size;
};

/* Ends with {NULL, NULL, 0}. */
extern const struct vt_html_asset vt_html_assets[];
/* "" when the build had every library; else what it lacked and how to get it. */
extern const char vt_html_missing[];

#endif
