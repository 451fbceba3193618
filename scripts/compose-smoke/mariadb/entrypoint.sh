#!/bin/sh
# First start: a data directory, then root with MARIADB_ROOT_PASSWORD from
# localhost and from any host (set through a server on its socket only).
set -eu
pw=${MARIADB_ROOT_PASSWORD:-${MYSQL_ROOT_PASSWORD:?MARIADB_ROOT_PASSWORD is required}}
mkdir -p /var/lib/mysql /run/mysqld
chown -R mysql:mysql /var/lib/mysql /run/mysqld
if [ ! -d /var/lib/mysql/mysql ]; then
	mariadb-install-db --user=mysql --datadir=/var/lib/mysql --skip-test-db >/dev/null
	mariadbd --user=mysql --datadir=/var/lib/mysql --skip-networking &
	i=0
	until mariadb -uroot -e 'SELECT 1' >/dev/null 2>&1; do
		i=$((i + 1))
		[ "$i" -lt 120 ] || { echo "mariadb stand-in: server did not start" >&2; exit 1; }
		sleep 0.5
	done
	q=$(printf '%s' "$pw" | sed "s/'/''/g")
	mariadb -uroot <<SQL
ALTER USER 'root'@'localhost' IDENTIFIED BY '$q';
CREATE USER 'root'@'%' IDENTIFIED BY '$q';
GRANT ALL ON *.* TO 'root'@'%' WITH GRANT OPTION;
FLUSH PRIVILEGES;
SQL
	mariadb-admin -uroot -p"$pw" shutdown
	wait
fi
exec mariadbd --user=mysql --datadir=/var/lib/mysql --bind-address=0.0.0.0 --skip-name-resolve
