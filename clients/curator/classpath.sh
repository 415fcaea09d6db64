#!/usr/bin/env bash
# Prints the Java class path for Apache Curator 5 (InterProcessMutex and the other
# recipes) from Debian's packages under /usr/share/java, colon-separated, on one line:
#
#     javac -cp "$(clients/curator/classpath.sh)" ...
#
# The jars: Curator's recipes, framework and client, the ZooKeeper client (with its
# jute records), Guava and SLF4J (with its no-op binding, so the client logs nothing).
# Debian's jars also name their own dependencies in their manifests.
#
# When a jar is missing it prints nothing, says on stderr which Debian packages to
# install, and exits 2. CURATOR_JAVA_DIR overrides /usr/share/java.
set -euo pipefail

dir="${CURATOR_JAVA_DIR:-/usr/share/java}"

# "jar:Debian package".
jars=(
    curator-recipes.jar:libcurator-recipes-java
    curator-framework.jar:libcurator-framework-java
    curator-client.jar:libcurator-client-java
    zookeeper.jar:libzookeeper-java
    zookeeper-jute.jar:libzookeeper-java
    guava.jar:libguava-java
    slf4j-api.jar:libslf4j-java
    slf4j-nop.jar:libslf4j-java
)

path=() missing=()
for entry in "${jars[@]}"; do
    jar="$dir/${entry%%:*}" pkg="${entry#*:}"
    if [ -f "$jar" ]; then
        path+=("$jar")
    elif [[ " ${missing[*]-} " != *" $pkg "* ]]; then
        missing+=("$pkg")
    fi
done

if [ ${#missing[@]} -gt 0 ]; then
    echo "clients/curator/classpath.sh: Curator's jars are missing from $dir;" \
        "install: apt-get install -y ${missing[*]}" >&2
    exit 2
fi

(IFS=:; echo "${path[*]}")
