#!/usr/bin/env bash
# Make sure the system tools a make target needs are here, before any slow step runs.
#   tools/system_deps.sh chromium npm fonts-wqy-microhei
# A tool that is present: nothing to do. A missing one: Debian's package through apt-get when
# this runs as root on a machine that has apt-get (CI's containers, this project's machines);
# anywhere else, one line saying what to install, and exit status 1.
# chromium is found at $CHROMIUM (the browser test's setting), else /usr/bin/chromium.
# fonts-wqy-microhei (the Chinese PDF's font, embedded in it) counts as present when fontconfig
# knows any font for Chinese (`fc-list :lang=zh`, e.g. Noto Sans CJK); without fc-list, when
# a WenQuanYi or Noto CJK font file is installed.
set -euo pipefail

present() {
    case "$1" in
        chromium) [ -x "${CHROMIUM:-/usr/bin/chromium}" ] ;;
        fonts-wqy-microhei)
            if command -v fc-list >/dev/null; then
                [ -n "$(fc-list :lang=zh 2>/dev/null)" ]
            else
                compgen -G "/usr/share/fonts/*/*/wqy-*" >/dev/null ||
                    compgen -G "/usr/share/fonts/*/*/NotoSansCJK-*" >/dev/null
            fi
            ;;
        *) command -v "$1" >/dev/null ;;
    esac
}

missing=()
for tool in "$@"; do
    present "$tool" || missing+=("$tool")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
    echo "Installing Debian's ${missing[*]} with apt-get (once per machine)..."
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
    for tool in "${missing[@]}"; do
        present "$tool" || { echo "apt-get installed $tool, but it is still not found" >&2; exit 1; }
    done
    exit 0
fi

for tool in "${missing[@]}"; do
    case "$tool" in
        chromium) why="the browser test drives it; or set CHROMIUM=/path/to/a/chromium" ;;
        npm) why="it fetches the JavaScript the book serves itself (package.json)" ;;
        fonts-wqy-microhei) why="the Chinese PDF embeds it (fonts-noto-cjk will do too)" ;;
        *) why="a make target needs it" ;;
    esac
    echo "Missing $tool: install it first (as root on Debian: apt-get install -y $tool; $why)." >&2
done
exit 1
